import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReport

/// Reports opened in a real browser (headless Chromium): the DOM it builds is read back with
/// `--dump-dom` and checked against the workout as the store returns it, computed here from the
/// samples and activities, never taken from the renderer. Serialized: each run starts a browser,
/// and the machine has two cores.
@Suite("Report in a real browser", .serialized)
struct BrowserTests {
    /// Writes the report of `input`, opens it headless and returns the DOM Chromium built.
    func render(
        _ input: ReportInput, in folder: URL, name: String
    ) throws -> (html: String, dom: String, seconds: Double) {
        let html = WorkoutReport.html(input)
        let page = folder.appendingPathComponent("\(name).html")
        try Data(html.utf8).write(to: page)
        let (dom, seconds) = try Chromium.dumpDOM(page)
        return (html, dom, seconds)
    }

    /// Checks the parts every report has: the legs (shaded, labelled, in the table), each time series
    /// against the samples, the summary's figures against the workout, and no network reference.
    func checkCommon(_ input: ReportInput, html: String, dom: String, labels: [String]) throws {
        let workout = input.workout
        // Self-contained: nothing is fetched when the page is viewed.
        for reference in ["src=\"http", "href=\"http", "url(http", "@import", "<link"] {
            #expect(!html.contains(reference), "the page references \(reference)")
        }
        // Legs: one shaded band and one label per activity (the whole workout when it has none).
        let activities: [(type: WorkoutActivityType, start: TimeInterval, end: TimeInterval)] =
            workout.activities.isEmpty
            ? [(workout.activityType, 0, workout.elapsed)]
            : workout.activities.map {
                (
                    $0.configuration.activityType, $0.start.timeIntervalSince(workout.start),
                    ($0.end ?? workout.end).timeIntervalSince(workout.start)
                )
            }
        let bands = elements("rect", in: dom).filter { $0.classes.contains("leg") }
        try #require(bands.count == activities.count, "\(bands.count) leg bands for \(activities.count) legs")
        for (band, activity) in zip(bands, activities) {
            #expect(band["data-type"] == activity.type.rawValue)
            #expect(abs((band.number("data-start") ?? -1) - activity.start) < 0.01)
            #expect(abs((band.number("data-end") ?? -1) - activity.end) < 0.01)
        }
        let legLabels = elements("text", in: dom).filter { $0.classes.contains("leg-label") }.map(\.text)
        #expect(legLabels == labels)
        let rows = elements("tr", in: dom).filter { $0["data-leg"] != nil }
        #expect(rows.map { $0["data-type"] ?? "" } == activities.map(\.type.rawValue))

        // Series: every sample of the chart's types inside the workout is counted, and the drawn
        // range is the samples' range.
        let groups = elements("g", in: dom).filter { $0["data-series"] != nil }
        let chartTypes: [String: Set<QuantityType>] = [
            "heartRate": [.heartRate], "speed": [.cyclingSpeed, .runningSpeed],
            "power": [.cyclingPower, .runningPower],
            "cadence": [.cyclingCadence, .runningCadence],
        ]
        for (name, types) in chartTypes {
            let values = input.samples.filter {
                types.contains($0.type) && $0.start >= workout.start && $0.start <= workout.end
            }.map { $0.quantity.doubleValue(for: $0.type.canonicalUnit) ?? .nan }.map {
                name == "speed" ? $0 * 3.6 : $0
            }
            let group = groups.first { $0["data-series"] == name }
            if values.isEmpty {
                if name != "speed" { #expect(group == nil, "a \(name) chart without \(name) samples") }
                continue
            }
            let drawn = try #require(group, "no \(name) chart though the workout has \(values.count) samples")
            #expect(drawn.number("data-samples") == Double(values.count))
            #expect(abs((drawn.number("data-max") ?? 0) - (values.max() ?? 0)) <= 0.051, "\(name) max")
            #expect(abs((drawn.number("data-min") ?? 0) - (values.min() ?? 0)) <= 0.051, "\(name) min")
            // Decimated: never more columns than pixels.
            #expect((drawn.number("data-columns") ?? .infinity) <= 1000)
        }

        // Summary figures against the workout.
        let summary = elements("div", in: dom).filter { $0["data-field"] != nil }
        #expect(
            Set(summary.compactMap { $0["data-field"] }).isSuperset(of: ["type", "date", "device", "elapsed", "active"])
        )
        let dds = elements("dd", in: dom)
        func summaryValue(_ field: String) -> Element? {
            guard let index = summary.firstIndex(where: { $0["data-field"] == field }), index < dds.count else {
                return nil
            }
            return dds[index]
        }
        #expect(abs((summaryValue("elapsed")?.number("data-value") ?? 0) - workout.elapsed) < 0.01)
        #expect(abs((summaryValue("active")?.number("data-value") ?? 0) - workout.duration) < 0.01)
        let distance = [QuantityType.distanceSwimming, .distanceCycling, .distanceWalkingRunning].compactMap {
            workout.statistics[$0]?.sum?.doubleValue(for: .meter)
        }.reduce(0, +)
        if distance > 0 {
            let shown = try #require(summaryValue("distance"))
            #expect(abs((shown.number("data-value") ?? 0) - distance) < 0.01)
            #expect(shown.text == String(format: "%.2f km", distance / 1000))
        }
        let heartRates = input.samples.filter {
            $0.type == .heartRate && $0.start >= workout.start && $0.start <= workout.end
        }
        .map(\.quantity.value)
        if let highest = heartRates.max() {
            // The workout's maximum is the highest reading that counted (pauses excluded): never above the samples'.
            let shown = try #require(summaryValue("heart-rate-maximum")?.number("data-value"))
            #expect(shown <= highest + 0.001 && shown >= (heartRates.min() ?? 0))
        }
        // Zones: a row per leg; no leg spends more time in zones than it lasted.
        let zoneRows = elements("g", in: dom).filter { $0.classes.contains("zone-row") }
        #expect(zoneRows.count == activities.count)
        for (row, activity) in zip(zoneRows, activities) {
            #expect((row.number("data-total") ?? .infinity) <= activity.end - activity.start + 0.01)
        }
    }

    @Test func fullDistanceTriathlonReplay() throws {
        try withTemporaryFolder { folder in
            let input = try replayed("full", seed: 1, in: folder)
            let (html, dom, seconds) = try render(input, in: folder, name: "full")
            try checkCommon(input, html: html, dom: dom, labels: ["Swim", "T1", "Bike", "T2", "Run"])
            // Route: a line per leg, in the legs' order.
            let routes = elements("path", in: dom).filter { $0.classes.contains("route") }
            #expect(routes.compactMap { $0["data-leg"] } == ["1", "2", "3", "4", "5"])
            // Recovery: the +60 s and +120 s marks and the engine's levels.
            let recovery = try #require(input.samples.first { $0.type == .heartRateRecoveryOneMinute })
            let marks = elements("line", in: dom).compactMap { $0["data-mark"] }
            #expect(marks == ["60", "120"])
            let levels = elements("circle", in: dom).filter { $0.classes.contains("level") }
            let oneMinute = try #require(recovery.metadata[MetadataKey.heartRateOneMinuteLater]?.numberValue)
            #expect(
                levels.contains { $0["data-offset"] == "60" && abs(($0.number("data-value") ?? 0) - oneMinute) < 0.051 }
            )
            // Hover (progressive enhancement, run by the browser): column 500's values under the cursor.
            let hovered = try #require(
                URL(string: folder.appendingPathComponent("full.html").absoluteString + "#hover=500"))
            let hoverDOM = try Chromium.dumpDOM(hovered).dom
            let elapsed = input.workout.elapsed
            var inColumn: [Double] = []
            for sample in input.samples where sample.type == .heartRate {
                let offset = sample.start.timeIntervalSince(input.workout.start)
                if offset >= 500.0 / 1000 * elapsed, offset < 501.0 / 1000 * elapsed {
                    inColumn.append(sample.quantity.value)
                }
            }
            let mean = inColumn.reduce(0, +) / Double(max(inColumn.count, 1))
            let shown = try #require(elements("span", in: hoverDOM).first { $0["data-series"] == "heartRate" })
            #expect(!inColumn.isEmpty)
            let value = shown.number("data-value") ?? 0
            #expect(abs(value - mean) <= 0.051, "hover shows \(value), the column's mean is \(mean)")
            #expect(shown.text.hasPrefix("Heart rate: "))
            #expect(html.utf8.count < 2_000_000)
            print("report full: \(html.utf8.count) bytes, --dump-dom \(String(format: "%.2f", seconds)) s")
        }
    }

    @Test func aTwentyFourHourUltraStaysLight() throws {
        try withTemporaryFolder { folder in
            let input = try replayed("ultra-24h", seed: 1, in: folder)
            #expect(input.workout.elapsed > 20 * 3600)
            let (html, dom, seconds) = try render(input, in: folder, name: "ultra")
            #expect(html.utf8.count <= 2_000_000, "\(html.utf8.count) bytes")
            try checkCommon(input, html: html, dom: dom, labels: ["Run"])
            // Drawn per pixel column, not per sample: the heart rate has tens of thousands of samples.
            let heartRate = try #require(elements("g", in: dom).first { $0["data-series"] == "heartRate" })
            #expect((heartRate.number("data-samples") ?? 0) > 50_000)
            #expect((heartRate.number("data-columns") ?? .infinity) <= 1000)
            print("report ultra-24h: \(html.utf8.count) bytes, --dump-dom \(String(format: "%.2f", seconds)) s")
        }
    }

    @Test func poolSwimReplay() throws {
        try withTemporaryFolder { folder in
            let input = try replayed("pool-swim", seed: 1, in: folder)
            let (html, dom, seconds) = try render(input, in: folder, name: "pool-swim")
            try checkCommon(input, html: html, dom: dom, labels: ["Swim"])
            try checkLengths(input, dom: dom)
            print("report pool-swim: \(html.utf8.count) bytes, --dump-dom \(String(format: "%.2f", seconds)) s")
        }
    }

    /// A bar per pool length with its time and strokes, kinds told apart, the SWOLF line over the
    /// active lengths, the sets as bands.
    func checkLengths(_ input: ReportInput, dom: String) throws {
        let lengths = input.workout.events.filter { $0.type == .lap && $0.metadata[SwimMetadataKey.lengthKind] != nil }
            .sorted { $0.start < $1.start }
        let bars = elements("g", in: dom).filter { $0.classes.contains("length") }
        try #require(bars.count == lengths.count, "\(bars.count) bars for \(lengths.count) lengths")
        for (bar, length) in zip(bars, lengths) {
            #expect(bar["data-kind"] == length.metadata[SwimMetadataKey.lengthKind]?.stringValue)
            #expect(abs((bar.number("data-seconds") ?? -1) - length.duration) < 0.006)
            let strokes = length.metadata[SwimMetadataKey.strokes]?.intValue.map(String.init) ?? ""
            #expect(bar["data-strokes"] == strokes)
        }
        let active = lengths.filter {
            $0.metadata[SwimMetadataKey.lengthKind] == .string("active") && $0.metadata[SwimMetadataKey.strokes] != nil
        }
        let line = try #require(elements("path", in: dom).first { $0["id"] == "swolf-line" })
        #expect(line.number("data-points") == Double(active.count))
        let sets = input.workout.events.filter { $0.metadata[MetadataKey.segmentKind] == .string("swimSet") }
        #expect(elements("g", in: dom).filter { $0.classes.contains("set") }.count == sets.count)
        let kinds = Set(bars.compactMap { $0["data-kind"] })
        #expect(kinds.contains("active"))
    }

    @Test func importedTriathlonShowsTheDevicesFigures() throws {
        try withTemporaryFolder { folder in
            let name = "mk_triathlon_summary_last.fit"
            let input = try imported(name, in: folder)
            let (html, dom, seconds) = try render(input, in: folder, name: "triathlon")
            try checkCommon(input, html: html, dom: dom, labels: ["Swim", "T1", "Bike", "T2", "Run"])
            // Ours next to the device's: the device's column is what Garmin's SDK decoded from the file.
            let sessions = try #require(try expectedDevice(name)["sessions"] as? [[String: Any]])
            let rows = elements("tr", in: dom).filter { $0["data-session"] != nil }
            #expect(rows.count == sessions.count)
            let cells = elements("td", in: dom).filter {
                $0["data-device"] != nil && $0["data-field"] == "heart-rate-average"
            }
            #expect(cells.count == sessions.count)
            for (cell, session) in zip(cells, sessions) {
                let device = try #require(session["avg_heart_rate"] as? Double)
                #expect(cell.number("data-device") == device)
            }
            let distances = elements("td", in: dom).filter {
                $0["data-device"] != nil && $0["data-field"] == "distance"
            }
            for (cell, session) in zip(distances, sessions) {
                let device = try #require(session["total_distance"] as? Double)
                #expect(abs((cell.number("data-device") ?? 0) - device) < 0.01)
            }
            #expect(dom.contains("Forerunner 255"))
            print("report \(name): \(html.utf8.count) bytes, --dump-dom \(String(format: "%.2f", seconds)) s")
        }
    }

    @Test func importedPoolSwimWithAStrap() throws {
        try withTemporaryFolder { folder in
            let name = "mk_sdk_activity_poolswim_with_hr.fit"
            let input = try imported(name, in: folder)
            let (html, dom, seconds) = try render(input, in: folder, name: "poolswim")
            try checkCommon(input, html: html, dom: dom, labels: ["Swim"])
            try checkLengths(input, dom: dom)
            let expected = try expectedDevice(name)
            let lengths = try #require(expected["lengths"] as? [[String: Any]])
            #expect(elements("g", in: dom).filter { $0.classes.contains("length") }.count == lengths.count)
            print("report \(name): \(html.utf8.count) bytes, --dump-dom \(String(format: "%.2f", seconds)) s")
        }
    }

    @Test func importedRideWithPower() throws {
        try withTemporaryFolder { folder in
            let name = "fp_edge810-vector.fit"
            let input = try imported(name, in: folder)
            let (html, dom, seconds) = try render(input, in: folder, name: "ride")
            try checkCommon(input, html: html, dom: dom, labels: ["Bike"])
            let power = try #require(elements("g", in: dom).first { $0["data-series"] == "power" })
            #expect((power.number("data-samples") ?? 0) > 100)
            #expect(dom.contains("Edge 810"))
            print("report \(name): \(html.utf8.count) bytes, --dump-dom \(String(format: "%.2f", seconds)) s")
        }
    }

    @Test func aScreenshotOfTheReportIsNotBlank() throws {
        try withTemporaryFolder { folder in
            let input = try replayed("sprint", seed: 2, in: folder)
            let page = folder.appendingPathComponent("sprint.html")
            try Data(WorkoutReport.html(input).utf8).write(to: page)
            let png = folder.appendingPathComponent("sprint.png")
            try Chromium.screenshot(page, to: png)
            let (colours, inked) = try pngStatistics(png)
            // Charts in several colours, text, shading: a blank or unstyled page has a handful.
            #expect(colours >= 50, "\(colours) colours")
            #expect(inked >= 0.05, "\(inked) of the pixels drawn")
        }
    }

    /// Spans from `begin` events to the next `finish` event (to the workout's end when none), in
    /// seconds from the workout's start.
    func spans(_ workout: Workout, _ begin: WorkoutEventType, _ finish: WorkoutEventType) -> [(Double, Double)] {
        var result: [(Double, Double)] = []
        var open: Double?
        for event in workout.events.sorted(by: { $0.start < $1.start }) {
            let offset = event.start.timeIntervalSince(workout.start)
            if event.type == begin, open == nil { open = offset }
            if event.type == finish, let start = open {
                result.append((start, offset))
                open = nil
            }
        }
        if let start = open { result.append((start, workout.elapsed)) }
        return result
    }

    @Test func pausesAndAutoPausesAreDrawnWhereTheyHappened() throws {
        try withTemporaryFolder { folder in
            // A real ride whose timer stopped 29 times (imported as auto-pauses).
            let ride = try imported("fp_sample-activity.fit", in: folder)
            let expected = spans(ride.workout, .motionPaused, .motionResumed)
            try #require(expected.count >= 10)
            let dom = try render(ride, in: folder, name: "stops").dom
            let drawn = elements("rect", in: dom).filter { $0.classes.contains("motion-pause") }
            #expect(drawn.count == expected.count)
            for (rect, span) in zip(drawn, expected) {
                #expect(abs((rect.number("data-start") ?? -1) - span.0) < 0.01)
                #expect(abs((rect.number("data-end") ?? -1) - span.1) < 0.01)
            }
            // User pauses: a run paused twice, the second time until the end.
            let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
            let watch = SourceDevice(name: "Watch")
            let run = Workout(
                id: UUID(), configuration: WorkoutConfiguration(activityType: .running), start: start,
                end: start + 600, duration: 420, activities: [],
                events: [
                    WorkoutEvent(type: .pause, start: start + 100), WorkoutEvent(type: .resume, start: start + 160),
                    WorkoutEvent(type: .pause, start: start + 480),
                ],
                metadata: [:], statistics: [:], counters: IngestCounters())
            let samples = (0..<600).map {
                QuantitySample(.heartRate, 120 + Double($0 % 30), at: start + Double($0), source: watch)
            }
            let paused = try render(ReportInput(workout: run, samples: samples, route: []), in: folder, name: "paused")
                .dom
            let pauses = elements("rect", in: paused).filter { $0.classes.contains("pause") }
            #expect(pauses.map { $0.number("data-start") ?? -1 } == [100, 480])
            #expect(pauses.map { $0.number("data-end") ?? -1 } == [160, 600])
        }
    }
}
