import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel

/// Everything a report draws, computed once from the input.
struct ReportModel {
    var workout: Workout
    var route: [RoutePoint]
    var options: ReportOptions
    var columns: Int
    var legs: [Leg]
    var pauses: (user: [Span], motion: [Span])
    var series: [Series]
    var zoneSeconds: [[Double]]
    var lengths: [(offset: TimeInterval, length: PoolLength)]
    var sets: [WorkoutEvent]
    var recovery: Analysis.Recovery?
    /// The recording device: an import's device (Garmin numbers named), else the samples' sources.
    var device: String

    init(_ input: ReportInput, options: ReportOptions) {
        workout = input.workout
        route = input.route
        self.options = options
        columns = options.columns
        legs = Analysis.legs(input.workout)
        pauses = Analysis.pauses(input.workout)
        let workout = input.workout
        // Heart-rate readings of the recovery window are not exercise: only the recovery chart draws them.
        let exercise = input.samples.filter { !$0.isHeartRateRecoveryReading }
        series = Series.Kind.allCases.map {
            Analysis.series($0, samples: exercise, route: input.route, workout: workout, columns: options.columns)
        }
        zoneSeconds = Analysis.zoneSeconds(
            legs: legs, samples: exercise, workout: workout, inactive: pauses.user + pauses.motion,
            options: options)
        lengths = Analysis.lengths(workout)
        sets = Analysis.swimSets(workout)
        recovery = Analysis.recovery(workout, samples: input.samples)
        if let name = workout.metadata["ImportDevice"]?.stringValue {
            device = GarminProduct.resolvingNumber(in: name)
        } else {
            // The sources of the samples, those with most samples first (a watch and its sensors).
            var counts: [String: Int] = [:]
            for sample in exercise { counts[sample.source.name, default: 0] += 1 }
            let names = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map(\.key)
            device = names.isEmpty ? "-" : names.prefix(3).joined(separator: ", ") + (names.count > 3 ? " …" : "")
        }
    }
}

/// One self-contained HTML page about a workout: summary, legs, time charts on one axis, heart-rate
/// zones, pool lengths, route, heart-rate recovery and, for imports, the device's own figures.
///
/// No network at view time: style, SVG and the small hover script are inline. The SVG alone is
/// readable (values written as text); the script only adds a cursor with the values under it.
/// Long workouts stay light: every time series is drawn as min/max/mean per pixel column.
public enum WorkoutReport {
    /// The report page of `input`.
    public static func html(_ input: ReportInput, options: ReportOptions = ReportOptions()) -> String {
        Page(ReportModel(input, options: options)).render()
    }

    /// The time chart alone (heart rate, speed, power, cadence with legs and pauses): the drawing
    /// the snapshot test pins.
    public static func timelineSVG(_ input: ReportInput, options: ReportOptions = ReportOptions()) -> String {
        Charts.timeline(ReportModel(input, options: options))
    }

    /// Zone lower bounds (count/min) for zones 1 to 5 with these options (heart-rate reserve:
    /// resting + 50, 60, 70, 80, 90 % of maximum − resting).
    public static func zoneBounds(_ options: ReportOptions) -> [Double] {
        Analysis.zoneBounds(options)
    }
}

/// The page's HTML.
struct Page {
    var model: ReportModel

    init(_ model: ReportModel) { self.model = model }

    func render() -> String {
        let workout = model.workout
        let title = "\(Text.sport(workout.activityType)) · \(Text.dateTime(workout.start))"
        var body =
            "<header><h1>\(Text.escape(title))</h1><p class=\"id\">Workout \(workout.id.uuidString)</p></header>\n"
        body += summary()
        body += section("legs-section", "Legs", legsTable())
        body += section(
            "charts-section", "Over time",
            "<p class=\"note\">One column per pixel: the shaded band spans the lowest and highest reading of "
                + "the column, the line is their mean. Shaded backgrounds are legs; hatched spans are pauses "
                + "(grey) and auto-pauses (orange).</p>\n" + "<div class=\"chart-box\">" + Charts.timeline(model)
                + "<div id=\"tooltip\" hidden></div></div>")
        body += section(
            "zones-section", "Heart-rate zones",
            "<p class=\"note\">Zones from the heart-rate reserve (Karvonen) with a maximum of "
                + "\(Text.whole(model.options.maximumHeartRate, "bpm")) and a resting heart rate of "
                + "\(Text.whole(model.options.restingHeartRate, "bpm")) (`--max-heart-rate`, "
                + "`--resting-heart-rate`): zone n starts at resting + (40 + 10·n) % of the reserve.</p>\n"
                + Charts.zones(model))
        if !model.lengths.isEmpty {
            body += section("lengths-section", "Pool lengths", lengthsSummary() + Charts.lengths(model))
        }
        if model.route.count >= 2 {
            body += section("route-section", "Route", Charts.route(model) + routeLegend())
        }
        if let recovery = model.recovery {
            body += section(
                "recovery-section", "Heart-rate recovery", recoveryText(recovery) + Charts.recovery(recovery))
        }
        if let comparison = deviceComparison() {
            body += section("device-section", "Ours and the device's", comparison)
        }
        body += "<footer>Made by workout-engine from the stored workout; this page needs no network.</footer>\n"
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(Text.escape(title))</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            \(body)<script type="application/json" id="report-data">\(hoverData())</script>
            <script>\(Self.script)</script>
            </body>
            </html>

            """
    }

    private func section(_ id: String, _ heading: String, _ content: String) -> String {
        "<section id=\"\(id)\"><h2>\(Text.escape(heading))</h2>\n\(content)\n</section>\n"
    }

    // MARK: summary

    private func summary() -> String {
        let workout = model.workout
        let statistics = workout.statistics
        var type = Text.sport(workout.activityType)
        if workout.configuration.locationType != .unknown {
            type += " (\(workout.configuration.locationType.rawValue))"
        }
        if let pool = workout.configuration.lapLength?.doubleValue(for: .meter), pool > 0 {
            type += ", \(Text.whole(pool, "m")) pool"
        }
        var rows: [(field: String, label: String, value: Double?, text: String)] = [
            ("type", "Type", nil, type),
            ("date", "Date", nil, Text.dateTime(workout.start)),
            ("device", "Device", nil, model.device),
            ("elapsed", "Elapsed", workout.elapsed, Text.duration(workout.elapsed)),
            ("active", "Active", workout.duration, Text.duration(workout.duration)),
            ("distance", "Distance", Self.distance(statistics), Text.kilometres(Self.distance(statistics))),
        ]
        let average = statistics[.heartRate]?.average?.doubleValue(for: .countPerMinute)
        let maximum = statistics[.heartRate]?.maximum?.doubleValue(for: .countPerMinute)
        rows.append(("heart-rate-average", "Average heart rate", average, Text.whole(average, "bpm")))
        rows.append(("heart-rate-maximum", "Maximum heart rate", maximum, Text.whole(maximum, "bpm")))
        if let recovery = model.recovery {
            rows.append(
                (
                    "hrr", "Heart-rate recovery (1 min)", recovery.drop,
                    recovery.drop.map { Text.whole($0, "bpm") } ?? "unavailable"
                ))
            if let twoMinutes = recovery.twoMinuteDrop {
                rows.append(("hrr2", "Two-minute drop", twoMinutes, Text.whole(twoMinutes, "bpm")))
            }
        }
        if let swolf = statistics[.swimmingSWOLF], let value = swolf.average?.value {
            rows.append(("swolf", "SWOLF", value, "\(Text.decimal(value, 1)) over \(swolf.sampleCount) active lengths"))
        }
        if let energy = statistics[.activeEnergyBurned]?.sum?.doubleValue(for: .kilocalorie) {
            rows.append(("energy", "Energy", energy, Text.whole(energy, "kcal")))
        }
        var html = "<dl id=\"summary\">"
        for row in rows {
            let value = row.value.map { " data-value=\"\(Text.decimal($0, 3))\"" } ?? ""
            html +=
                "<div data-field=\"\(row.field)\"><dt>\(row.label)</dt><dd\(value)>\(Text.escape(row.text))</dd></div>"
        }
        return html + "</dl>\n"
    }

    static func distance(_ statistics: [QuantityType: Statistics]) -> Double? {
        let types: [QuantityType] = [
            .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .distancePaddleSports,
        ]
        let sums = types.compactMap {
            statistics[$0]?.sum?.doubleValue(for: .meter)
        }
        return sums.isEmpty ? nil : sums.reduce(0, +)
    }

    // MARK: legs

    private func legsTable() -> String {
        var html = """
            <table id="legs"><thead><tr><th>#</th><th>Leg</th><th>Start</th><th>Elapsed</th><th>Active</th>\
            <th>Distance</th><th>Avg HR</th><th>Max HR</th><th>Speed/pace</th><th>Avg power</th><th>Cadence</th></tr></thead><tbody>

            """
        for leg in model.legs {
            html += row(
                number: "\(leg.number)", label: leg.label, type: leg.type, start: leg.start,
                elapsed: leg.end - leg.start,
                active: leg.active, statistics: leg.statistics,
                attributes: "data-leg=\"\(leg.number)\" data-type=\"\(leg.type.rawValue)\"")
        }
        if model.legs.count > 1 {
            let workout = model.workout
            html += row(
                number: "", label: "Total", type: workout.activityType, start: 0, elapsed: workout.elapsed,
                active: workout.duration, statistics: workout.statistics, attributes: "class=\"total\"")
        }
        return html + "</tbody></table>"
    }

    private func row(
        number: String, label: String, type: WorkoutActivityType, start: TimeInterval, elapsed: TimeInterval,
        active: TimeInterval, statistics: [QuantityType: Statistics], attributes: String
    ) -> String {
        let distance = Self.distance(statistics)
        let heartRate = statistics[.heartRate]?.average?.doubleValue(for: .countPerMinute)
        let maximum = statistics[.heartRate]?.maximum?.doubleValue(for: .countPerMinute)
        let powerType: QuantityType? =
            switch type {
            case .cycling: .cyclingPower
            case .running: .runningPower
            default: [QuantityType.cyclingPower, .runningPower].first { statistics[$0]?.average != nil }
            }
        let power = powerType.flatMap { statistics[$0]?.average?.doubleValue(for: .watt) }
        let cadenceType: QuantityType = type == .running ? .runningCadence : .cyclingCadence
        let cadence = statistics[cadenceType]?.average?.doubleValue(for: .countPerMinute)
        func cell(_ field: String, _ value: Double?, _ text: String) -> String {
            "<td data-field=\"\(field)\"\(value.map { " data-value=\"\(Text.decimal($0, 3))\"" } ?? "")>\(Text.escape(text))</td>"
        }
        return
            "<tr \(attributes)><td>\(number)</td><td class=\"leg-name leg-\(type.rawValue)\">\(Text.escape(label))</td>"
            + cell("start", start, Text.duration(start)) + cell("elapsed", elapsed, Text.duration(elapsed))
            + cell("active", active, Text.duration(active)) + cell("distance", distance, Text.kilometres(distance))
            + cell("heart-rate-average", heartRate, Text.whole(heartRate, "bpm"))
            + cell("heart-rate-maximum", maximum, Text.whole(maximum, "bpm"))
            + cell("speed", nil, Text.speedOrPace(meters: distance, seconds: active, type: type))
            + cell("power", power, Text.whole(power, "W")) + cell("cadence", cadence, Text.whole(cadence, "/min"))
            + "</tr>\n"
    }

    // MARK: lengths, route, recovery

    private func lengthsSummary() -> String {
        let lengths = model.lengths.map(\.length)
        let active = lengths.filter { $0.kind == .active }.count
        let drills = lengths.filter { $0.kind == .drill }.count
        let rests = lengths.filter { $0.kind == .rest }.count
        return "<p id=\"lengths-summary\" data-lengths=\"\(lengths.count)\" data-active=\"\(active)\" "
            + "data-drill=\"\(drills)\" data-rest=\"\(rests)\" data-sets=\"\(model.sets.count)\">"
            + "\(lengths.count) lengths: \(active) active, \(drills) drill, \(rests) rest, in \(model.sets.count) sets. "
            + "Bars are each length's time, the inner bar its strokes, the line its SWOLF.</p>\n"
    }

    private func routeLegend() -> String {
        var seen: [String] = []
        var html = "<p class=\"route-legend\">"
        for leg in model.legs where !seen.contains(leg.type.rawValue) {
            seen.append(leg.type.rawValue)
            html += "<span class=\"swatch leg-\(leg.type.rawValue)\"></span>\(Text.escape(Text.sport(leg.type))) "
        }
        return html + "</p>"
    }

    private func recoveryText(_ recovery: Analysis.Recovery) -> String {
        var parts: [String] = []
        if let drop = recovery.drop { parts.append("HRR1 \(Text.whole(drop, "bpm"))") }
        if let drop = recovery.twoMinuteDrop { parts.append("two-minute drop \(Text.whole(drop, "bpm"))") }
        parts += recovery.reasons.map { "unavailable: \($0)" }
        return "<p id=\"recovery-summary\">" + Text.escape(parts.joined(separator: "; ")) + ". The heart rate at the "
            + "stop is a line fitted through the last 30 s of exercise; at +60 s and +120 s, lines through the "
            + "readings within 10 s of the mark.</p>\n"
    }

    // MARK: device comparison

    /// Ours next to the device's figures per session, for imports that kept the device's summaries.
    private func deviceComparison() -> String? {
        let metadata = model.workout.metadata
        guard metadata["ImportFormat"] != nil else { return nil }
        guard let sessions = metadata[DeviceSummaryKey.sessions]?.intValue, sessions > 0 else {
            return "<p class=\"note\">This workout was imported before the device's figures were kept; delete and "
                + "import the file again to see them here.</p>"
        }
        var html = """
            <p class="note">Each cell is ours / the device's. Ours are recomputed from the samples by the engine.</p>
            <table id="device-comparison"><thead><tr><th>Session</th><th>Sport</th><th>Avg HR</th><th>Max HR</th>\
            <th>Distance (m)</th><th>Elapsed</th><th>Timer</th><th>Avg power</th><th>Lengths</th><th>SWOLF</th></tr></thead><tbody>

            """
        let legs = model.legs
        for number in 1...min(sessions, 200) {
            func device(_ figure: DeviceSummaryKey.Figure) -> Double? {
                metadata[DeviceSummaryKey.key(session: number, figure)]?.numberValue
            }
            let sport = metadata[DeviceSummaryKey.key(session: number, .sport)]?.stringValue ?? "-"
            let statistics: [QuantityType: Statistics]
            let elapsed: TimeInterval?
            let timer: TimeInterval?
            if sessions == 1 {
                statistics = model.workout.statistics
                elapsed = model.workout.elapsed
                timer = model.workout.duration
            } else if legs.count == sessions {
                statistics = legs[number - 1].statistics
                elapsed = legs[number - 1].end - legs[number - 1].start
                timer = legs[number - 1].active
            } else {
                statistics = [:]
                elapsed = nil
                timer = nil
            }
            let oursLengths =
                model.lengths.isEmpty ? nil : Double(model.lengths.filter { $0.length.kind != .rest }.count)
            let power = [QuantityType.cyclingPower, .runningPower].compactMap { statistics[$0]?.average?.value }.first
            func pair(_ field: String, _ ours: Double?, _ theirs: Double?, _ digits: Int) -> String {
                "<td data-field=\"\(field)\" data-ours=\"\(Text.decimal(ours, 3))\" data-device=\"\(Text.decimal(theirs, 3))\">"
                    + "\(Text.decimal(ours, digits)) / \(Text.decimal(theirs, digits))</td>"
            }
            html +=
                "<tr data-session=\"\(number)\"><td>\(number)</td><td>\(Text.escape(sport))</td>"
                + pair("heart-rate-average", statistics[.heartRate]?.average?.value, device(.averageHeartRate), 1)
                + pair("heart-rate-maximum", statistics[.heartRate]?.maximum?.value, device(.maximumHeartRate), 0)
                + pair("distance", Self.distance(statistics), device(.distance), 1)
                + pair("elapsed", elapsed, device(.elapsed), 1) + pair("timer", timer, device(.timerTime), 1)
                + pair("power", power, device(.averagePower), 0)
                + pair("lengths", sessions == 1 ? oursLengths : nil, device(.lengths), 0)
                + pair("swolf", statistics[.swimmingSWOLF]?.average?.value, device(.swolf), 1) + "</tr>\n"
        }
        return html + "</tbody></table>"
    }

    // MARK: hover

    /// The columns' means for the hover script: `{"elapsed": s, "columns": n, "legs": [...], "series": {...}}`.
    private func hoverData() -> String {
        var json =
            "{\"elapsed\":\(Text.decimal(model.workout.elapsed, 3)),\"columns\":\(model.columns),\"left\":"
            + "\(Text.coordinate(Charts.left)),\"legs\":["
        json += model.legs.map {
            "{\"label\":\"\(Text.escape($0.label))\",\"type\":\"\($0.type.rawValue)\",\"start\":\(Text.decimal($0.start, 1)),"
                + "\"end\":\(Text.decimal($0.end, 1))}"
        }.joined(separator: ",")
        json += "],\"series\":{"
        json += model.series.filter { !$0.isEmpty }.map { series in
            "\"\(series.kind.rawValue)\":{\"unit\":\"\(Text.escape(series.unit))\",\"title\":\"\(series.title)\",\"columns\":["
                + series.columns.map { "[\($0.index),\(Text.decimal($0.mean, 1))]" }.joined(separator: ",") + "]}"
        }.joined(separator: ",")
        return json + "}}"
    }

    // MARK: style and script

    static let style = """
        :root{--swim:#1f77b4;--bike:#2ca02c;--run:#d62728;--trans:#7f7f7f;--walk:#9467bd;--other:#8c564b;--paddle:#17becf;--ink:#1b1f24;--muted:#5b6470}
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);margin:0 auto;max-width:1180px;padding:16px 20px}
        h1{font-size:24px;margin:4px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d8dde3;padding-bottom:4px}
        .id{color:var(--muted);margin:0;font-size:12px}.note{color:var(--muted);font-size:12.5px;margin:4px 0 8px}
        #summary{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:8px;margin:14px 0}
        #summary div{background:#f4f6f8;border-radius:6px;padding:8px 10px}#summary dt{color:var(--muted);font-size:12px}
        #summary dd{margin:0;font-size:17px;font-weight:600}
        table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}th,td{padding:4px 8px;text-align:right;border-bottom:1px solid #e6e9ed}
        th:nth-child(2),td:nth-child(2){text-align:left}tr.total td{font-weight:600;border-top:2px solid #c5ccd4}
        .chart{width:100%;height:auto;display:block;font-size:11px;fill:var(--ink)}
        .chart-box{position:relative}
        #tooltip{position:absolute;pointer-events:none;background:#fff;border:1px solid #aab2bd;border-radius:4px;padding:4px 8px;font-size:12px;white-space:nowrap;box-shadow:0 1px 4px #0002}
        .leg{fill-opacity:.09}.leg.even{fill-opacity:.16}
        .leg-swimming{fill:var(--swim);stroke:var(--swim)}.leg-cycling{fill:var(--bike);stroke:var(--bike)}
        .leg-running{fill:var(--run);stroke:var(--run)}.leg-transition{fill:var(--trans);stroke:var(--trans)}
        .leg-walking{fill:var(--walk);stroke:var(--walk)}.leg-paddleSports{fill:var(--paddle);stroke:var(--paddle)}.leg-other,.leg-swimBikeRun{fill:var(--other);stroke:var(--other)}
        rect.leg{stroke:none}text.leg-label{stroke:none;font-weight:600;font-size:12px}
        .pause{fill:url(#hatch);stroke:#888;stroke-width:.5}.hatch-line{stroke:#6b7280;stroke-width:2;stroke-opacity:.5}
        .motion-pause{fill:url(#hatch-motion);stroke:#e08a00;stroke-width:.5}.hatch-motion-line{stroke:#e08a00;stroke-width:2;stroke-opacity:.6}
        .grid{stroke:#e3e7eb;stroke-width:1}.axis line{stroke:#9aa3ad}.y-label,.x-label,.axis text{fill:var(--muted)}
        .panel-title{font-weight:600;font-size:12px;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
        .band{stroke:none;fill-opacity:.25}.line{fill:none;stroke-width:1.3}
        .series-heartRate .band{fill:#d62728}.series-heartRate .line{stroke:#b0181f}
        .series-speed .band{fill:#1f77b4}.series-speed .line{stroke:#15598a}
        .series-power .band{fill:#ff7f0e}.series-power .line{stroke:#c85f00}
        .series-cadence .band{fill:#9467bd}.series-cadence .line{stroke:#6b4496}
        .cursor{stroke:#1b1f24;stroke-width:1;stroke-dasharray:3 2}
        .zone{stroke:#fff;stroke-width:1}.z0{fill:#c7ced6}.z1{fill:#8fc1e3}.z2{fill:#6cc26c}.z3{fill:#f2c14e}.z4{fill:#f08a3c}.z5{fill:#d8363a}
        .zone-text{font-size:11px;fill:#10151a}.legend{fill:var(--muted)}
        .cut{stroke:#8a939d;stroke-dasharray:2 2}.cut-label{font-size:9px;fill:var(--muted)}.length-active .bar{fill:#5b9bd5}.length-drill .bar{fill:#f0a030}.length-rest .bar{fill:#c4cad1}
        .strokes{fill:#1d4f7c}.swolf{fill:none;stroke:#d62728;stroke-width:1.6;stroke-linecap:round}
        .set-band{fill:#1f77b4;fill-opacity:.06;stroke:#1f77b4;stroke-opacity:.25}.set-label{font-size:11px;fill:#15598a}
        .legend-active{fill:#5b9bd5}.legend-strokes{fill:#1d4f7c}.legend-drill{fill:#f0a030}.legend-rest{fill:#c4cad1}
        #route{max-width:460px}.route{fill:none;stroke-width:2.2;stroke-linejoin:round;stroke-linecap:round}
        .start{fill:#2ca02c;stroke:#fff}.finish{fill:#1b1f24;stroke:#fff}
        .swatch{display:inline-block;width:14px;height:4px;margin:0 4px 3px 10px}
        .swatch.leg-swimming{background:var(--swim)}.swatch.leg-cycling{background:var(--bike)}.swatch.leg-running{background:var(--run)}
        .swatch.leg-transition{background:var(--trans)}.swatch.leg-walking{background:var(--walk)}.swatch.leg-paddleSports{background:var(--paddle)}.swatch.leg-other{background:var(--other)}
        #recovery{max-width:780px}.exercise{fill:none;stroke:#b0181f;stroke-width:1.5}.after{fill:none;stroke:#b0181f;stroke-opacity:.5}
        .recovery-levels{fill:none;stroke:#1b1f24;stroke-width:1.5;stroke-dasharray:5 3}.mark{stroke:#5b6470;stroke-dasharray:2 3}
        .mark.stop{stroke:#1b1f24;stroke-dasharray:none}.level{fill:#1b1f24}.level-label{font-weight:600}
        footer{margin:32px 0 8px;color:var(--muted);font-size:12px}
        @media print{#tooltip{display:none}}
        """

    /// The hover: a cursor on the time chart and the values of every series at that column. A page
    /// opened as `report.html#hover=N` shows column N at load (how the browser tests check it). The
    /// page notes how long the browser took to parse it (`data-parsed-ms` on `<html>`, from the
    /// navigation's start to the script at the page's end).
    static let script = """
        (function(){if(window.performance)document.documentElement.setAttribute('data-parsed-ms',Math.round(performance.now()));
        var svg=document.getElementById('timeline'),tip=document.getElementById('tooltip'),cur=document.getElementById('cursor');
        var holder=document.getElementById('report-data');if(!svg||!tip||!cur||!holder)return;var d;try{d=JSON.parse(holder.textContent)}catch(e){return}
        var idx={};Object.keys(d.series).forEach(function(k){var m={};d.series[k].columns.forEach(function(c){m[c[0]]=c[1]});idx[k]=m});
        function clock(s){s=Math.round(s);var h=Math.floor(s/3600),m=Math.floor(s/60)%60,x=s%60;return h+':'+(m<10?'0':'')+m+':'+(x<10?'0':'')+x}
        function pace(kmh){if(!(kmh>0.5))return'';var s=Math.round(3600/kmh);return' ('+Math.floor(s/60)+':'+((s%60)<10?'0':'')+(s%60)+' /km)'}
        function hide(){tip.hidden=true;cur.setAttribute('visibility','hidden')}
        function at(col){if(!(col>=0&&col<d.columns)){hide();return false}var t=(col+0.5)/d.columns*d.elapsed,leg=null;
        d.legs.forEach(function(l){if(t>=l.start&&t<l.end)leg=l});var lines=['<b>'+clock(t)+'</b>'+(leg?' · '+leg.label:'')];
        Object.keys(d.series).forEach(function(k){var s=d.series[k],v=idx[k][col];if(v!==undefined)lines.push('<span data-series="'+k+'" data-value="'+v+'">'+
        s.title+': '+v+' '+s.unit+(k==='speed'&&leg&&(leg.type==='running'||leg.type==='walking')?pace(v):'')+'</span>')});
        tip.innerHTML=lines.join('<br>');tip.hidden=false;tip.setAttribute('data-column',col);var b=svg.getBoundingClientRect(),w=svg.viewBox.baseVal.width||1;
        tip.style.left=Math.min((col+d.left)/w*b.width+12,b.width-180)+'px';tip.style.top='40px';
        cur.setAttribute('x1',col+d.left+0.5);cur.setAttribute('x2',col+d.left+0.5);cur.setAttribute('visibility','visible');return true}
        svg.addEventListener('pointermove',function(ev){var p=svg.createSVGPoint();p.x=ev.clientX;p.y=ev.clientY;var m=svg.getScreenCTM();if(!m)return;
        var q=p.matrixTransform(m.inverse());if(!at(Math.floor(q.x-d.left)))return;var box=svg.getBoundingClientRect();
        tip.style.left=Math.min(ev.clientX-box.left+12,box.width-180)+'px';tip.style.top=(ev.clientY-box.top+12)+'px'});
        svg.addEventListener('pointerleave',hide);var h=/^#hover=(\\d+)$/.exec(location.hash);if(h)at(+h[1])})();
        """
}
