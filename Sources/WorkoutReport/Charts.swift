import Foundation
import WorkoutEngine
import WorkoutModel

/// The report's SVG charts. Each is readable without script: values that matter are written as
/// text, and every drawn element carries `data-*` attributes with its numbers (the hover script and
/// the browser tests read them).
enum Charts {
    // MARK: time charts

    static let left = 64.0
    static let right = 24.0
    static let legBand = 26.0
    static let panelHeight = 110.0
    static let panelGap = 28.0
    static let axisHeight = 30.0

    /// The shared time axis: heart rate, speed, power and cadence panels (those with data) under
    /// one x axis, legs shaded and labelled across all of them, pauses and motion pauses hatched.
    static func timeline(_ report: ReportModel) -> String {
        let columns = Double(report.columns)
        let elapsed = max(report.workout.elapsed, 1)
        let panels = report.series.filter { !$0.isEmpty }
        let width = left + columns + right
        let plotTop = legBand
        let plotHeight = Double(max(panels.count, 1)) * (panelHeight + panelGap) - panelGap
        let height = plotTop + plotHeight + axisHeight
        func x(_ seconds: TimeInterval) -> Double { left + seconds / elapsed * columns }
        var svg = """
            <svg id="timeline" class="chart" viewBox="0 0 \(Text.coordinate(width)) \(Text.coordinate(height))" \
            role="img" aria-label="Heart rate, speed, power and cadence over time" data-elapsed="\(Text.decimal(elapsed, 3))" \
            data-columns="\(report.columns)" data-left="\(Text.coordinate(left))">
            <defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
            <rect width="6" height="6" fill="#ffffff" fill-opacity="0"/><line x1="0" y1="0" x2="0" y2="6" class="hatch-line"/></pattern>\
            <pattern id="hatch-motion" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)">\
            <line x1="0" y1="0" x2="0" y2="6" class="hatch-motion-line"/></pattern></defs>

            """
        // Legs: a shaded band over every panel, the label above.
        for leg in report.legs {
            let x0 = x(leg.start)
            let x1 = x(leg.end)
            svg += """
                <g class="leg-band" data-leg="\(leg.number)"><rect class="leg leg-\(leg.type.rawValue)\(leg.number % 2 == 0 ? " even" : "")" \
                data-leg="\(leg.number)" data-type="\(leg.type.rawValue)" data-start="\(Text.decimal(leg.start, 3))" \
                data-end="\(Text.decimal(leg.end, 3))" x="\(Text.coordinate(x0))" y="\(Text.coordinate(plotTop))" \
                width="\(Text.coordinate(max(x1 - x0, 0.5)))" height="\(Text.coordinate(plotHeight))">\
                <title>\(leg.number). \(Text.escape(leg.label)): \(Text.duration(leg.start)) to \(Text.duration(leg.end))</title></rect>\
                <text class="leg-label leg-\(leg.type.rawValue)" data-leg="\(leg.number)" x="\(Text.coordinate((x0 + x1) / 2))" \
                y="\(Text.coordinate(plotTop - 8))" text-anchor="middle">\(Text.escape(x1 - x0 >= 30 ? leg.label : String(leg.label.prefix(2))))</text></g>

                """
        }
        // Pauses over every panel.
        for (kind, spans) in [("pause", report.pauses.user), ("motion-pause", report.pauses.motion)] {
            for span in spans {
                let x0 = x(span.start)
                let x1 = x(span.end)
                let name = kind == "pause" ? "Paused" : "Stopped (auto-pause)"
                svg += """
                    <rect class="\(kind)" data-start="\(Text.decimal(span.start, 3))" data-end="\(Text.decimal(span.end, 3))" \
                    x="\(Text.coordinate(x0))" y="\(Text.coordinate(plotTop))" width="\(Text.coordinate(max(x1 - x0, 1)))" \
                    height="\(Text.coordinate(plotHeight))"><title>\(name) at \(Text.duration(span.start)) for \
                    \(Text.duration(span.duration))</title></rect>

                    """
            }
        }
        if panels.isEmpty {
            svg += """
                <text class="empty" x="\(Text.coordinate(width / 2))" y="\(Text.coordinate(plotTop + plotHeight / 2))" \
                text-anchor="middle">No heart rate, speed, power or cadence was recorded.</text>

                """
        }
        for (index, series) in panels.enumerated() {
            let top = plotTop + Double(index) * (panelHeight + panelGap)
            svg += panel(series, top: top, columns: columns, secondsPerColumn: elapsed / columns)
        }
        // The time axis.
        let axisY = plotTop + plotHeight
        svg +=
            "<g class=\"axis x-axis\"><line x1=\"\(Text.coordinate(left))\" y1=\"\(Text.coordinate(axisY))\" "
            + "x2=\"\(Text.coordinate(left + columns))\" y2=\"\(Text.coordinate(axisY))\"/>"
        for tick in ticks(elapsed, columns: report.columns) {
            let tx = x(tick)
            svg +=
                "<line class=\"grid\" x1=\"\(Text.coordinate(tx))\" y1=\"\(Text.coordinate(plotTop))\" "
                + "x2=\"\(Text.coordinate(tx))\" y2=\"\(Text.coordinate(axisY + 4))\"/>"
                + "<text x=\"\(Text.coordinate(tx))\" y=\"\(Text.coordinate(axisY + 18))\" text-anchor=\"middle\">"
                + "\(tickLabel(tick, elapsed: elapsed))</text>"
        }
        svg +=
            "</g>\n<line id=\"cursor\" class=\"cursor\" x1=\"0\" x2=\"0\" y1=\"\(Text.coordinate(plotTop))\" "
            + "y2=\"\(Text.coordinate(axisY))\" visibility=\"hidden\"/>\n</svg>"
        return svg
    }

    /// One series: its min/max envelope per column and its mean line, with a y axis.
    private static func panel(
        _ series: Series, top: Double, columns: Double, secondsPerColumn: TimeInterval
    ) -> String {
        var low = series.minimum
        var high = series.maximum
        let step = niceStep((high - low) / 3)
        low = (low / step).rounded(.down) * step
        high = (high / step).rounded(.up) * step
        if high <= low { high = low + step }
        func y(_ value: Double) -> Double { top + panelHeight - (value - low) / (high - low) * panelHeight }
        var band = ""
        var line = ""
        // Runs of neighbouring columns: a gap of more than 2 columns and 10 s breaks the line.
        var runs: [[(index: Int, min: Double, max: Double, mean: Double)]] = []
        for column in series.columns {
            if let last = runs.last?.last,
                column.index - last.index <= 2 || Double(column.index - last.index) * secondsPerColumn <= 10
            {
                runs[runs.count - 1].append(column)
            } else {
                runs.append([column])
            }
        }
        for var run in runs {
            var xs = run.map { left + Double($0.index) + 0.5 }
            if run.count == 1 {
                // A lone column is drawn one pixel wide: a path through a single point draws nothing.
                run.append(run[0])
                xs = [xs[0] - 0.5, xs[0] + 0.5]
            }
            band +=
                "M"
                + zip(xs, run).map { "\(Text.coordinate($0.0)) \(Text.coordinate(y($0.1.max)))" }.joined(separator: "L")
            band +=
                "L"
                + zip(xs, run).reversed().map { "\(Text.coordinate($0.0)) \(Text.coordinate(y($0.1.min)))" }
                .joined(separator: "L") + "Z"
            line +=
                "M"
                + zip(xs, run).map { "\(Text.coordinate($0.0)) \(Text.coordinate(y($0.1.mean)))" }
                .joined(separator: "L")
        }
        let kind = series.kind.rawValue
        var svg = """
            <g class="series series-\(kind)" data-series="\(kind)" data-samples="\(series.sampleCount)" \
            data-columns="\(series.columns.count)" data-min="\(Text.decimal(series.minimum, 1))" \
            data-max="\(Text.decimal(series.maximum, 1))" data-unit="\(Text.escape(series.unit))">
            <text class="panel-title" x="\(Text.coordinate(left + 6))" y="\(Text.coordinate(top + 13))">\(series.title) \
            (\(Text.escape(series.unit))) · min \(Text.decimal(series.minimum, 0)) · max \(Text.decimal(series.maximum, 0))</text>

            """
        for value in [low, (low + high) / 2, high] {
            svg +=
                "<line class=\"grid\" x1=\"\(Text.coordinate(left))\" x2=\"\(Text.coordinate(left + columns))\" "
                + "y1=\"\(Text.coordinate(y(value)))\" y2=\"\(Text.coordinate(y(value)))\" data-scale=\"y\"/>"
                + "<text class=\"y-label\" x=\"\(Text.coordinate(left - 6))\" y=\"\(Text.coordinate(y(value) + 4))\" "
                + "text-anchor=\"end\">\(Text.decimal(value, 0))</text>"
        }
        svg += "\n<path class=\"band\" d=\"\(band)\"/>\n<path class=\"line\" d=\"\(line)\"/>\n</g>\n"
        return svg
    }

    /// The fewest pixels between two time-axis ticks (a label such as "1191360:00" fits between them).
    static let minimumTickSpacing = 80.0
    /// The most time-axis ticks whatever the span (about 8 on a workout's usual spans).
    static let maximumTicks = 10.0
    /// A year on the time axis (365.25 days).
    static let year: TimeInterval = 31_557_600

    /// Tick positions every 1, 2, 5, 10, 15, 30 minutes, 1, 2, 3, 6, 12 hours, 1, 2, 7, 14, 30, 91, 182 days
    /// or 1, 2, 5 × a power of ten years: the smallest step leaving at most `maximumTicks` intervals and at least
    /// `minimumTickSpacing` pixels between ticks over `columns` pixels.
    ///
    /// The number of ticks is bounded by the chart's width, never by the span: a file spanning 136 years draws
    /// as many grid lines as a run.
    static func ticks(_ elapsed: TimeInterval, columns: Int = ReportOptions().columns) -> [TimeInterval] {
        guard elapsed.isFinite, elapsed > 0 else { return [0] }
        let step = tickStep(elapsed, columns: columns)
        let count = Int((elapsed / step).rounded(.down))
        return (0...max(0, count)).map { Double($0) * step }
    }

    /// The step of `ticks`.
    static func tickStep(_ elapsed: TimeInterval, columns: Int) -> TimeInterval {
        let intervals = max(1, min(maximumTicks, (Double(max(columns, 1)) / minimumTickSpacing).rounded(.down)))
        let steps: [TimeInterval] = [
            60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 2 * 86400, 7 * 86400, 14 * 86400,
            30 * 86400, 91 * 86400, 182 * 86400,
        ]
        if let step = steps.first(where: { elapsed / $0 <= intervals }) { return step }
        return niceStep(elapsed / intervals / year) * year
    }

    /// A tick's label: hours and minutes ("25:30"), whole days past two days ("14d"), years past a year ("5y").
    static func tickLabel(_ seconds: TimeInterval, elapsed: TimeInterval) -> String {
        if elapsed >= 2 * year {
            return Text.decimal(seconds / year, seconds.truncatingRemainder(dividingBy: year) == 0 ? 0 : 1) + "y"
        }
        if elapsed > 4 * 86400 { return "\(Int((seconds / 86400).rounded()))d" }
        let total = Int(seconds.rounded())
        let minutes = total / 60 % 60
        return "\(total / 3600):" + (minutes < 10 ? "0" : "") + "\(minutes)"
    }

    /// 1, 2 or 5 times a power of ten, at least `raw`.
    static func niceStep(_ raw: Double) -> Double {
        guard raw.isFinite, raw > 0 else { return 1 }
        let power = pow(10, (log10(raw)).rounded(.down))
        for multiple in [1.0, 2, 5, 10] where multiple * power >= raw { return multiple * power }
        return 10 * power
    }

    // MARK: zones

    /// Time in heart-rate zones per leg: a stacked bar per leg, zone bounds in the legend.
    static func zones(_ report: ReportModel) -> String {
        let bounds = Analysis.zoneBounds(report.options)
        let rowHeight = 26.0
        let barLeft = 110.0
        let barWidth = 640.0
        let legs = report.legs
        let height = Double(legs.count) * rowHeight + 40
        var svg = """
            <svg id="zones" class="chart" viewBox="0 0 \(Text.coordinate(barLeft + barWidth + 150)) \(Text.coordinate(height))" \
            role="img" aria-label="Time in heart-rate zones per leg">

            """
        for (row, leg) in legs.enumerated() {
            let seconds = report.zoneSeconds[row]
            let total = seconds.reduce(0, +)
            let y = Double(row) * rowHeight + 4
            svg +=
                "<g class=\"zone-row\" data-leg=\"\(leg.number)\" data-total=\"\(Text.decimal(total, 1))\">"
                + "<text x=\"\(Text.coordinate(barLeft - 8))\" y=\"\(Text.coordinate(y + 15))\" text-anchor=\"end\">"
                + "\(leg.number). \(Text.escape(leg.label))</text>"
            var x = barLeft
            for zone in 0..<6 where seconds[zone] > 0 {
                let width = total > 0 ? seconds[zone] / total * barWidth : 0
                svg +=
                    "<rect class=\"zone z\(zone)\" data-zone=\"\(zone)\" data-seconds=\"\(Text.decimal(seconds[zone], 1))\" "
                    + "x=\"\(Text.coordinate(x))\" y=\"\(Text.coordinate(y))\" width=\"\(Text.coordinate(width))\" height=\"20\">"
                    + "<title>Zone \(zone): \(Text.duration(seconds[zone])) (\(Text.decimal(seconds[zone] / total * 100, 0)) %)</title></rect>"
                if width >= 34 {
                    svg +=
                        "<text class=\"zone-text\" x=\"\(Text.coordinate(x + width / 2))\" y=\"\(Text.coordinate(y + 15))\" "
                        + "text-anchor=\"middle\">Z\(zone) \(Text.decimal(seconds[zone] / total * 100, 0))%</text>"
                }
                x += width
            }
            if total == 0 {
                svg += "<text x=\"\(Text.coordinate(barLeft))\" y=\"\(Text.coordinate(y + 15))\">no heart rate</text>"
            } else {
                svg +=
                    "<text x=\"\(Text.coordinate(barLeft + barWidth + 8))\" y=\"\(Text.coordinate(y + 15))\">"
                    + "\(Text.duration(total))</text>"
            }
            svg += "</g>\n"
        }
        // Legend: zone n from its lower bound.
        let legendY = Double(legs.count) * rowHeight + 14
        var x = barLeft
        let names =
            ["Z0 <\(Int(bounds[0].rounded()))"]
            + (1...5).map { zone in
                zone < 5
                    ? "Z\(zone) \(Int(bounds[zone - 1].rounded()))–\(Int(bounds[zone].rounded()) - 1)"
                    : "Z5 ≥\(Int(bounds[4].rounded()))"
            }
        for (zone, name) in names.enumerated() {
            svg +=
                "<rect class=\"zone z\(zone)\" x=\"\(Text.coordinate(x))\" y=\"\(Text.coordinate(legendY))\" width=\"12\" height=\"12\"/>"
                + "<text class=\"legend\" data-zone=\"\(zone)\" x=\"\(Text.coordinate(x + 16))\" y=\"\(Text.coordinate(legendY + 11))\">"
                + "\(name)</text>"
            x += 112
        }
        svg += "\n</svg>"
        return svg
    }

    // MARK: pool lengths

    /// A bar per pool length (its seconds; strokes as an inner bar), the SWOLF line over active
    /// lengths, rests and drills told apart, swim sets as labelled bands behind their lengths.
    static func lengths(_ report: ReportModel) -> String {
        let lengths = report.lengths
        let plotLeft = 48.0
        let plotWidth = 1000.0
        let top = 34.0
        let plotHeight = 220.0
        let slot = plotWidth / Double(max(lengths.count, 1))
        // The scale follows the lengths swum: a long rest at the wall is drawn cut at the top, its time written.
        let swum = lengths.filter { $0.length.kind != .rest }.map(\.length.duration)
        let longest =
            max(
                (swum.isEmpty ? lengths.map(\.length.duration) : swum).max() ?? 1,
                lengths.compactMap(\.length.swolf).max() ?? 1
            ) * 1.1
        let high = (longest / niceStep(longest / 4)).rounded(.up) * niceStep(longest / 4)
        func y(_ value: Double) -> Double { top + plotHeight - value / max(high, 1) * plotHeight }
        var svg = """
            <svg id="lengths" class="chart" viewBox="0 0 \(Text.coordinate(plotLeft + plotWidth + 16)) \
            \(Text.coordinate(top + plotHeight + 40))" role="img" aria-label="Pool lengths: time, strokes and SWOLF">

            """
        // Sets behind their lengths.
        for (number, set) in report.sets.enumerated() {
            let start = set.start.timeIntervalSince(report.workout.start)
            let end = start + set.duration
            let members = lengths.indices.filter {
                lengths[$0].offset >= start - 0.001 && lengths[$0].offset < end - 0.001
            }
            guard let first = members.first, let last = members.last else { continue }
            let x0 = plotLeft + Double(first) * slot
            let x1 = plotLeft + Double(last + 1) * slot
            let count = set.metadata[SwimMetadataKey.lengths]?.intValue ?? members.count
            let style = set.metadata[SwimMetadataKey.strokeStyle]?.stringValue ?? ""
            let swolf = set.metadata[SwimMetadataKey.swolf]?.numberValue
            svg +=
                "<g class=\"set\" data-set=\"\(number + 1)\" data-lengths=\"\(count)\"><rect class=\"set-band\" "
                + "x=\"\(Text.coordinate(x0))\" y=\"\(Text.coordinate(top - 26))\" width=\"\(Text.coordinate(x1 - x0))\" "
                + "height=\"\(Text.coordinate(plotHeight + 26))\"/><text class=\"set-label\" x=\"\(Text.coordinate(x0 + 3))\" "
                + "y=\"\(Text.coordinate(top - 14))\">Set \(number + 1)\(x1 - x0 > 90 ? ": \(count)× \(Text.escape(style))" : "")"
                + "\(x1 - x0 > 170 && swolf != nil ? ", SWOLF \(Text.decimal(swolf, 1))" : "")</text></g>\n"
        }
        for value in [0, high / 2, high] {
            svg +=
                "<line class=\"grid\" x1=\"\(Text.coordinate(plotLeft))\" x2=\"\(Text.coordinate(plotLeft + plotWidth))\" "
                + "y1=\"\(Text.coordinate(y(value)))\" y2=\"\(Text.coordinate(y(value)))\"/><text class=\"y-label\" "
                + "x=\"\(Text.coordinate(plotLeft - 6))\" y=\"\(Text.coordinate(y(value) + 4))\" text-anchor=\"end\">"
                + "\(Text.decimal(value, 0))</text>"
        }
        var swolfRuns: [[String]] = [[]]
        for (index, entry) in lengths.enumerated() {
            let length = entry.length
            let x = plotLeft + Double(index) * slot
            let barWidth = max(slot * 0.8, 0.6)
            let strokes = length.strokes.map { "\($0)" } ?? ""
            let swolf = length.swolf.map { Text.decimal($0, 1) } ?? ""
            let title =
                "Length \(index + 1) (\(length.kind.rawValue)\(length.style.map { ", " + $0 } ?? "")): "
                + "\(Text.decimal(length.duration, 1)) s"
                + (length.strokes.map { ", \($0) strokes" } ?? "")
                + (length.swolf.map { ", SWOLF \(Text.decimal($0, 1))" } ?? "")
            let cut = length.duration > high
            let shown = min(length.duration, high)
            svg +=
                "<g class=\"length length-\(length.kind.rawValue)\" data-index=\"\(index + 1)\" "
                + "data-kind=\"\(length.kind.rawValue)\" data-seconds=\"\(Text.decimal(length.duration, 2))\" "
                + "data-strokes=\"\(strokes)\" data-swolf=\"\(swolf)\"><title>\(Text.escape(title))</title>"
                + "<rect class=\"bar\(cut ? " cut" : "")\" x=\"\(Text.coordinate(x + (slot - barWidth) / 2))\" "
                + "y=\"\(Text.coordinate(y(shown)))\" width=\"\(Text.coordinate(barWidth))\" "
                + "height=\"\(Text.coordinate(y(0) - y(shown)))\"/>"
            if cut {
                svg +=
                    "<text class=\"cut-label\" x=\"\(Text.coordinate(x + slot / 2))\" y=\"\(Text.coordinate(top - 2))\" "
                    + "text-anchor=\"middle\">\(Text.minutesSeconds(length.duration))</text>"
            }
            if let count = length.strokes {
                let inner = max(barWidth * 0.45, 0.5)
                let strokes = min(Double(count), high)
                svg +=
                    "<rect class=\"strokes\" x=\"\(Text.coordinate(x + (slot - inner) / 2))\" "
                    + "y=\"\(Text.coordinate(y(strokes)))\" width=\"\(Text.coordinate(inner))\" "
                    + "height=\"\(Text.coordinate(y(0) - y(strokes)))\"/>"
            }
            svg += "</g>\n"
            if let value = length.swolf {
                swolfRuns[swolfRuns.count - 1].append("\(Text.coordinate(x + slot / 2)) \(Text.coordinate(y(value)))")
            } else if swolfRuns.last?.isEmpty == false {
                swolfRuns.append([])  // drills and rests have no SWOLF: the line breaks there
            }
        }
        let swolfCount = swolfRuns.reduce(0) { $0 + $1.count }
        if swolfCount > 0 {
            svg +=
                "<path id=\"swolf-line\" class=\"swolf\" data-points=\"\(swolfCount)\" d=\""
                + swolfRuns.filter { !$0.isEmpty }.map { run in
                    "M" + (run.count == 1 ? [run[0], run[0]] : run).joined(separator: "L")
                }
                .joined() + "\"/>\n"
        }
        let legendY = top + plotHeight + 24
        svg += """
            <g class="legend"><rect class="legend-active" x="\(Text.coordinate(plotLeft))" y="\(Text.coordinate(legendY - 10))" width="12" height="12"/>\
            <text x="\(Text.coordinate(plotLeft + 16))" y="\(Text.coordinate(legendY))">active length (s)</text>\
            <rect class="legend-strokes" x="\(Text.coordinate(plotLeft + 140))" y="\(Text.coordinate(legendY - 10))" width="12" height="12"/>\
            <text x="\(Text.coordinate(plotLeft + 156))" y="\(Text.coordinate(legendY))">strokes</text>\
            <rect class="legend-drill" x="\(Text.coordinate(plotLeft + 230))" y="\(Text.coordinate(legendY - 10))" width="12" height="12"/>\
            <text x="\(Text.coordinate(plotLeft + 246))" y="\(Text.coordinate(legendY))">drill</text>\
            <rect class="legend-rest" x="\(Text.coordinate(plotLeft + 300))" y="\(Text.coordinate(legendY - 10))" width="12" height="12"/>\
            <text x="\(Text.coordinate(plotLeft + 316))" y="\(Text.coordinate(legendY))">rest</text>\
            <line class="swolf" x1="\(Text.coordinate(plotLeft + 370))" x2="\(Text.coordinate(plotLeft + 394))" \
            y1="\(Text.coordinate(legendY - 4))" y2="\(Text.coordinate(legendY - 4))"/>\
            <text x="\(Text.coordinate(plotLeft + 400))" y="\(Text.coordinate(legendY))">SWOLF (s + strokes)</text></g>
            </svg>
            """
        return svg
    }

    // MARK: route

    /// The route as one line per leg, coloured by the leg's sport; start and finish marked.
    static func route(_ report: ReportModel) -> String {
        let size = 420.0
        let lines = Analysis.route(report.route, workout: report.workout, legs: report.legs, size: size)
        var svg = """
            <svg id="route" class="chart" viewBox="0 0 \(Text.coordinate(size)) \(Text.coordinate(size))" role="img" \
            aria-label="Route, coloured by leg">

            """
        for line in lines {
            let type = report.legs.first { $0.number == line.leg }?.type.rawValue ?? "other"
            let count = line.paths.reduce(0) { $0 + $1.count }
            svg +=
                "<path class=\"route leg-\(type)\" data-leg=\"\(line.leg)\" data-points=\"\(count)\" d=\""
                + line.paths.map { path in
                    "M" + path.map { "\(Text.coordinate($0.0)) \(Text.coordinate($0.1))" }.joined(separator: "L")
                }.joined() + "\"/>\n"
        }
        if let start = lines.first?.paths.first?.first, let finish = lines.last?.paths.last?.last {
            svg +=
                "<circle class=\"start\" cx=\"\(Text.coordinate(start.0))\" cy=\"\(Text.coordinate(start.1))\" r=\"5\">"
                + "<title>Start</title></circle><circle class=\"finish\" cx=\"\(Text.coordinate(finish.0))\" "
                + "cy=\"\(Text.coordinate(finish.1))\" r=\"5\"><title>Finish</title></circle>\n"
        }
        svg += "</svg>"
        return svg
    }

    // MARK: heart-rate recovery

    /// Heart rate from two minutes before the stop to 130 s after it: the exercise readings, the
    /// engine's levels at the stop, +60 s and +120 s with their values.
    static func recovery(_ recovery: Analysis.Recovery) -> String {
        let plotLeft = 48.0
        let plotWidth = 600.0
        let top = 20.0
        let plotHeight = 180.0
        let values =
            recovery.exercise.map(\.1) + recovery.after.map(\.1)
            + [recovery.atEnd, recovery.oneMinute, recovery.twoMinutes].compactMap { $0 }
        var low = (values.min() ?? 60) - 5
        var high = (values.max() ?? 180) + 5
        let step = niceStep((high - low) / 3)
        low = (low / step).rounded(.down) * step
        high = (high / step).rounded(.up) * step
        func x(_ offset: TimeInterval) -> Double { plotLeft + (offset + 120) / 250 * plotWidth }
        func y(_ value: Double) -> Double { top + plotHeight - (value - low) / max(high - low, 1) * plotHeight }
        var svg = """
            <svg id="recovery" class="chart" viewBox="0 0 \(Text.coordinate(plotLeft + plotWidth + 120)) \
            \(Text.coordinate(top + plotHeight + 40))" role="img" aria-label="Heart-rate recovery after the stop">

            """
        for value in [low, (low + high) / 2, high] {
            svg +=
                "<line class=\"grid\" x1=\"\(Text.coordinate(plotLeft))\" x2=\"\(Text.coordinate(plotLeft + plotWidth))\" "
                + "y1=\"\(Text.coordinate(y(value)))\" y2=\"\(Text.coordinate(y(value)))\"/><text class=\"y-label\" "
                + "x=\"\(Text.coordinate(plotLeft - 6))\" y=\"\(Text.coordinate(y(value) + 4))\" text-anchor=\"end\">"
                + "\(Text.decimal(value, 0))</text>"
        }
        for (offset, label) in [(-120.0, "−2:00"), (-60, "−1:00"), (0, "stop"), (60, "+1:00"), (120, "+2:00")] {
            svg +=
                "<text class=\"x-label\" x=\"\(Text.coordinate(x(offset)))\" y=\"\(Text.coordinate(top + plotHeight + 18))\" "
                + "text-anchor=\"middle\">\(label)</text>"
        }
        if !recovery.exercise.isEmpty {
            svg +=
                "<path class=\"exercise\" data-points=\"\(recovery.exercise.count)\" d=\"M"
                + recovery.exercise.map { "\(Text.coordinate(x($0.0))) \(Text.coordinate(y($0.1)))" }.joined(
                    separator: "L")
                + "\"/>\n"
        }
        if !recovery.after.isEmpty {
            svg +=
                "<path class=\"after\" data-points=\"\(recovery.after.count)\" d=\"M"
                + recovery.after.map { "\(Text.coordinate(x($0.0))) \(Text.coordinate(y($0.1)))" }.joined(
                    separator: "L")
                + "\"/>\n"
        }
        let levels = [(0.0, recovery.atEnd), (60, recovery.oneMinute), (120, recovery.twoMinutes)]
            .compactMap { offset, value in value.map { (offset, $0) } }
        if levels.count >= 2 {
            svg +=
                "<path class=\"recovery-levels\" d=\"M"
                + levels.map { "\(Text.coordinate(x($0.0))) \(Text.coordinate(y($0.1)))" }.joined(separator: "L")
                + "\"/>\n"
        }
        svg +=
            "<line class=\"mark stop\" x1=\"\(Text.coordinate(x(0)))\" x2=\"\(Text.coordinate(x(0)))\" "
            + "y1=\"\(Text.coordinate(top))\" y2=\"\(Text.coordinate(top + plotHeight))\"/>"
        for (offset, value) in levels {
            let drop = recovery.atEnd.map { $0 - value }
            let text =
                offset == 0
                ? "end \(Text.decimal(value, 0)) bpm"
                : "+\(Int(offset)) s: \(Text.decimal(value, 0)) bpm" + (drop.map { " (−\(Text.decimal($0, 0)))" } ?? "")
            if offset > 0 {
                svg +=
                    "<line class=\"mark\" data-mark=\"\(Int(offset))\" x1=\"\(Text.coordinate(x(offset)))\" "
                    + "x2=\"\(Text.coordinate(x(offset)))\" y1=\"\(Text.coordinate(top))\" y2=\"\(Text.coordinate(top + plotHeight))\"/>"
            }
            svg +=
                "<circle class=\"level\" data-offset=\"\(Int(offset))\" data-value=\"\(Text.decimal(value, 1))\" "
                + "cx=\"\(Text.coordinate(x(offset)))\" cy=\"\(Text.coordinate(y(value)))\" r=\"4\"/>"
                + "<text class=\"level-label\" x=\"\(Text.coordinate(x(offset) + 6))\" y=\"\(Text.coordinate(y(value) - 8))\">"
                + "\(text)</text>\n"
        }
        svg += "</svg>"
        return svg
    }
}
