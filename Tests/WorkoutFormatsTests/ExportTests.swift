import Foundation
import Testing
import WorkoutEngine
import WorkoutFormats
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore

/// A replayed race with its saved samples and route.
struct SavedRace: Sendable {
    var workout: Workout
    var samples: [QuantitySample]
    var route: [RoutePoint]

    /// `sprint` with a 45 s red light on the bike and auto-pause (motion pauses), or `sprint-pool`.
    static func replay(_ name: String, redLight: Bool = false) throws -> SavedRace {
        var scenario = try Scenario.load(name)
        var options = ReplayOptions()
        if redLight, let bike = scenario.legs.firstIndex(where: { $0.type == .cycling }) {
            scenario.legs[bike].segments.insert(
                Scenario.Segment(distance: nil, duration: 45, intensity: 0.3, style: nil, kind: .stop), at: 1)
            options.autoPause = .standard
        }
        let store = try temporaryStore()
        let result = try RaceReplay.run(scenario, seed: 11, into: store, options: options)
        return SavedRace(
            workout: result.workout, samples: try store.samples(workout: result.workout.id),
            route: try store.route(workout: result.workout.id))
    }

    func write(_ bytes: [UInt8], _ ext: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString).\(ext)")
            .path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// FIT seconds (whole) of a date, computed here from the FIT epoch (1989-12-31T00:00:00Z).
func fitSecond(_ date: Date) -> Int { Int((date.timeIntervalSince1970 - 631_065_600).rounded(.down)) }

@Suite("Export")
struct ExportTests {
    /// The values the exported FIT file must hold, from the workout (not from the encoder).
    static func expectedFIT(_ race: SavedRace) -> [String: Any] {
        let workout = race.workout
        let sportCodes: [WorkoutActivityType: Int] = [.swimming: 5, .transition: 3, .cycling: 2, .running: 1]
        let lengths = workout.events.compactMap { event in PoolLength(event).map { (event, $0) } }
        var sessions: [[String: Any]] = []
        for activity in workout.activities {
            let end = activity.end ?? workout.end
            var session: [String: Any] = [
                "sport": sportCodes[activity.configuration.activityType] ?? 0,
                "start_time": fitSecond(activity.start), "total_elapsed_time": end.timeIntervalSince(activity.start),
                "total_timer_time": activity.duration,
            ]
            if activity.configuration.activityType == .swimming {
                session["sub_sport"] = activity.configuration.swimmingLocationType == .pool ? 17 : 18
            }
            let distance = [QuantityType.distanceSwimming, .distanceCycling, .distanceWalkingRunning].compactMap {
                activity.statistics[$0]?.sum?.value
            }
            if !distance.isEmpty { session["total_distance"] = distance.reduce(0, +) }
            if let heartRate = activity.statistics[.heartRate] {
                session["avg_heart_rate"] = Int((heartRate.average?.value ?? 0).rounded())
                session["max_heart_rate"] = Int((heartRate.maximum?.value ?? 0).rounded())
            }
            let inside = lengths.filter { $0.0.start >= activity.start && $0.0.start < end }
            if !inside.isEmpty { session["num_lengths"] = inside.filter { $0.1.kind != .rest }.count }
            if let strokes = activity.statistics[.swimmingStrokeCount]?.sum?.value {
                session["total_strokes"] = Int(strokes.rounded())
            }
            if let swolf = activity.statistics[.swimmingSWOLF]?.average?.value {
                session["avg_swolf"] = Int(swolf.rounded())
            }
            sessions.append(session)
        }
        var heartRates: [Int: Int] = [:]
        // Readings of the recovery window are records after the end, from 1 s to 129 s after it (a
        // record less than a second after the end would be read as the session's last).
        var recoveryRecords: [Int: Int] = [:]
        let endSeconds = workout.end.timeIntervalSince1970 - 631_065_600
        for sample in race.samples where sample.type == .heartRate {
            let value = Int(sample.quantity.value.rounded())
            if sample.isHeartRateRecoveryReading {
                let offset = Double(fitSecond(sample.start)) - endSeconds
                if offset >= 1, offset <= 129 { recoveryRecords[fitSecond(sample.start)] = value }
            } else {
                heartRates[fitSecond(sample.start)] = value
            }
        }
        let distance = race.samples.filter {
            [.distanceSwimming, .distanceCycling, .distanceWalkingRunning].contains($0.type)
        }.map(\.quantity.value).reduce(0, +)
        let styles = ["freestyle": 0, "backstroke": 1, "breaststroke": 2, "butterfly": 3, "mixed": 5]
        let fitLengths: [[String: Any]] = lengths.map { event, length in
            var entry: [String: Any] = [
                "start_time": fitSecond(event.start), "total_elapsed_time": event.duration,
                "length_type": length.kind == .rest ? 0 : 1,
            ]
            switch length.kind {
            case .active:
                entry["total_strokes"] = length.strokes ?? 0
                entry["swim_stroke"] = styles[length.style ?? ""] ?? NSNull()
            case .drill:
                entry["total_strokes"] = 0
                entry["swim_stroke"] = 4
            case .rest:
                break
            }
            return entry
        }
        var timer: [[Int]] = [[fitSecond(workout.start), 0, 0]]
        var motion = false
        for event in workout.events.sorted(by: { $0.start < $1.start }) {
            switch event.type {
            case .pause, .motionPaused:
                motion = event.type == .motionPaused
                timer.append([fitSecond(event.start), 4, motion ? 1 : 0])
            case .resume, .motionResumed:
                timer.append([fitSecond(event.start), 0, event.type == .motionResumed ? 1 : 0])
            default:
                break
            }
        }
        timer.append([fitSecond(workout.end), 4, 0])
        var recovery: [Int] = []
        if case .double(let drop)? = workout.metadata[MetadataKey.heartRateRecoveryOneMinute] {
            recovery.append(Int(drop.rounded()))
        }
        return [
            "sessions": sessions, "heart_rates": heartRates.sorted { $0.key < $1.key }.map { [$0.key, $0.value] },
            "final_distance": distance, "lengths": fitLengths, "timer_events": timer, "recovery_hr": recovery,
            "records_end": fitSecond(workout.end),
            "recovery_records": recoveryRecords.sorted { $0.key < $1.key }.map { [$0.key, $0.value] },
        ]
    }

    @Test(arguments: ["sprint", "sprint-pool"])
    func garminsSDKReadsBackWhatWeWrote(name: String) throws {
        let race = try SavedRace.replay(name, redLight: name == "sprint")
        let fit = try race.write(FITExport.encode(race.workout, samples: race.samples, route: race.route), "fit")
        let expected = try race.write(
            Array(try JSONSerialization.data(withJSONObject: Self.expectedFIT(race))), "json")
        let report = try GarminSDK.verify(["check", fit, expected])
        #expect(report["ok"] as? Bool == true, "\(report["problems"] ?? "")")
        let checked = report["checked"] as? [String: Any] ?? [:]
        #expect((checked["sessions"] as? Int) == race.workout.activities.count)
        #expect(((checked["heart_rates"] as? Int) ?? 0) > 1000)
        // The replay stored the recovery window's readings; most become records after the end.
        #expect(race.samples.filter(\.isHeartRateRecoveryReading).count >= 100)
        #expect((Self.expectedFIT(race)["recovery_records"] as? [[Int]])?.count ?? 0 >= 100)
        if name == "sprint" {
            #expect(race.workout.events.contains { $0.type == .motionPaused }, "the red light auto-pauses")
        } else {
            #expect(((checked["lengths"] as? Int) ?? 0) > 10)
        }
    }

    @Test func gpxAndTCXHoldTheRouteAndTheLegs() throws {
        let race = try SavedRace.replay("sprint")
        // The recovery window's readings are not exercise: the track is the same without them.
        let exercise = race.samples.filter { !$0.isHeartRateRecoveryReading }
        #expect(exercise.count < race.samples.count)
        #expect(
            GPXExport.encode(race.workout, samples: race.samples, route: race.route)
                == GPXExport.encode(race.workout, samples: exercise, route: race.route))
        #expect(
            TCXExport.encode(race.workout, samples: race.samples, route: race.route)
                == TCXExport.encode(race.workout, samples: exercise, route: race.route))
        let gpx = try race.write(
            Array(GPXExport.encode(race.workout, samples: race.samples, route: race.route).utf8), "gpx")
        let heartRate = race.samples.filter { $0.type == .heartRate }.sorted { $0.start < $1.start }
        var pointRates: [[Any]] = []
        for point in race.route.enumerated().filter({ $0.offset % 50 == 0 }).map(\.element) {
            guard let reading = heartRate.last(where: { $0.start <= point.date }),
                point.date.timeIntervalSince(reading.start) <= 5
            else { continue }
            pointRates.append([point.date.formatted(Date.ISO8601FormatStyle()), Int(reading.quantity.value.rounded())])
        }
        let gpxExpected: [String: Any] = [
            "segments": race.workout.activities.count, "points": race.route.count, "heart_rates": pointRates,
        ]
        let gpxReport = try GarminSDK.verify([
            "gpx", gpx, try race.write(Array(try JSONSerialization.data(withJSONObject: gpxExpected)), "json"),
        ])
        #expect(gpxReport["ok"] as? Bool == true, "\(gpxReport["problems"] ?? "")")

        let tcx = try race.write(
            Array(TCXExport.encode(race.workout, samples: race.samples, route: race.route).utf8), "tcx")
        let tcxExpected: [String: Any] = [
            "multisport_sessions": 1, "sports": ["Other", "Biking", "Running"], "transitions": 2,
            "total_time": race.workout.activities.map(\.duration).reduce(0, +), "min_points": race.route.count,
        ]
        let tcxReport = try GarminSDK.verify([
            "tcx", tcx, try race.write(Array(try JSONSerialization.data(withJSONObject: tcxExpected)), "json"),
        ])
        #expect(tcxReport["ok"] as? Bool == true, "\(tcxReport["problems"] ?? "")")
    }

    /// Replay a simulated triathlon, export FIT, import it again: the same workout (times to the
    /// second, statistics within the file's rounding).
    @Test(arguments: ["sprint", "sprint-pool"])
    func aRoundTripThroughFITGivesTheSameWorkout(name: String) throws {
        let race = try SavedRace.replay(name, redLight: name == "sprint")
        let path = try race.write(FITExport.encode(race.workout, samples: race.samples, route: race.route), "fit")
        let store = try temporaryStore()
        let imported = try FileImport.run(path: path, into: store)
        let copy = imported.workout
        expectEquivalent(race.workout, copy, name)
        // The recovery readings went out as records after the last session and come back as the
        // copy's recovery: the same HRR within the file's whole-second, whole-bpm resolution.
        let original = race.samples.filter(\.isHeartRateRecoveryReading)
        let readBack = try store.samples(workout: copy.id).filter(\.isHeartRateRecoveryReading)
        #expect(original.count >= 100)
        #expect(readBack.count >= original.count - 2 && readBack.count <= original.count, "\(readBack.count) of \(original.count)")
        for key in [MetadataKey.heartRateRecoveryOneMinute, MetadataKey.heartRateRecoveryTwoMinutes] {
            let ours = try #require(race.workout.metadata[key]?.numberValue, "\(name) \(key)")
            let again = try #require(copy.metadata[key]?.numberValue, "\(name) \(key) after the round trip")
            #expect(abs(ours - again) <= 2, "\(name) \(key): \(ours) vs \(again)")
        }
    }

    /// User pauses survive a round trip (timer stop_all / start with the manual trigger).
    @Test func userPausesRoundTrip() throws {
        let clock = ManualClock(Date(timeIntervalSinceReferenceDate: 800_000_000))
        let sink = InMemoryRecording()
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running), clock: clock, sink: sink)
        let watch = SourceDevice(name: "watch")
        try session.start()
        for second in 0..<600 {
            clock.set(Date(timeIntervalSinceReferenceDate: 800_000_000 + Double(second)))
            if second == 200 { try session.pause() }
            if second == 260 { try session.resume() }
            let now = clock.now()
            try session.builder.add([
                QuantitySample(.heartRate, Double(130 + second % 20), at: now, source: watch),
                QuantitySample(.runningSpeed, 3 + Double(second % 7) / 10, at: now, source: watch),
                QuantitySample(.distanceWalkingRunning, 3.2, at: now, end: now.addingTimeInterval(1), source: watch),
            ])
        }
        let end = Date(timeIntervalSinceReferenceDate: 800_000_600)
        try session.stop(at: end)
        try session.end(at: end)
        let workout = try session.builder.finishWorkout()
        let bytes = FITExport.encode(workout, samples: sink.samples, route: [])
        let plan = try FITImportPlan(bytes: bytes)
        let copySession = try WorkoutSession(
            configuration: plan.configuration, clock: ManualClock(plan.start), options: plan.builderOptions)
        try plan.replay(into: copySession, clock: ManualClock(plan.start))
        let copy = try copySession.builder.finishWorkout()
        #expect(
            copy.events.filter { $0.type == .pause || $0.type == .resume }.map(\.start) == [
                Date(timeIntervalSinceReferenceDate: 800_000_200), Date(timeIntervalSinceReferenceDate: 800_000_260),
            ])
        expectEquivalent(workout, copy, "running with a pause")
        #expect(abs(copy.duration - 540) < 0.001)
    }
}

/// The same workout up to the file's resolution: times to the second, statistics within rounding.
func expectEquivalent(_ original: Workout, _ copy: Workout, _ label: String) {
    #expect(original.configuration == copy.configuration, "\(label)")
    #expect(abs(original.start.timeIntervalSince(copy.start)) < 1, "\(label): start")
    #expect(abs(original.end.timeIntervalSince(copy.end)) < 1, "\(label): end")
    #expect(abs(original.duration - copy.duration) < 1, "\(label): duration")
    #expect(original.activities.count == copy.activities.count, "\(label): activities")
    func compare(_ a: [QuantityType: Statistics], _ b: [QuantityType: Statistics], _ context: String) {
        #expect(
            Set(a.keys) == Set(b.keys),
            "\(context): statistics types \(a.keys.map(\.rawValue).sorted()) vs \(b.keys.map(\.rawValue).sorted())")
        for (type, x) in a {
            guard let y = b[type] else { continue }
            func close(_ p: Quantity?, _ q: Quantity?, _ what: String) {
                guard let p, let q else {
                    #expect(p == nil && q == nil, "\(context) \(type.rawValue) \(what)")
                    return
                }
                // FIT keeps heart rate and power whole, speed in mm/s, distance in cm, cadence in 1/128.
                let tolerance = max(0.01, 1e-4 * abs(p.value))
                #expect(
                    abs(p.value - q.value) <= tolerance, "\(context) \(type.rawValue) \(what): \(p.value) vs \(q.value)"
                )
            }
            close(x.average, y.average, "average")
            close(x.maximum, y.maximum, "maximum")
            close(x.minimum, y.minimum, "minimum")
            close(x.sum, y.sum, "sum")
        }
    }
    compare(original.statistics, copy.statistics, "\(label) workout")
    for (a, b) in zip(original.activities, copy.activities) {
        let context = "\(label) \(a.configuration.activityType.rawValue)"
        #expect(a.configuration == b.configuration, "\(context)")
        #expect(abs(a.start.timeIntervalSince(b.start)) < 1, "\(context): start")
        #expect(abs((a.end ?? original.end).timeIntervalSince(b.end ?? copy.end)) < 1, "\(context): end")
        #expect(abs(a.duration - b.duration) < 1, "\(context): duration \(a.duration) vs \(b.duration)")
        compare(a.statistics, b.statistics, context)
    }
    let lengths = (original.events.compactMap(PoolLength.init), copy.events.compactMap(PoolLength.init))
    #expect(lengths.0.count == lengths.1.count, "\(label): lengths")
    for (a, b) in zip(lengths.0, lengths.1) {
        #expect(a.kind == b.kind && a.style == b.style && a.strokes == b.strokes, "\(label): length at \(a.start)")
        #expect(abs(a.start.timeIntervalSince(b.start)) < 1 && abs(a.duration - b.duration) < 0.001)
    }
    let sets = { (workout: Workout) in workout.events.filter { $0.type == .segment }.count }
    #expect(sets(original) == sets(copy), "\(label): swim sets")
    let pauses = { (workout: Workout) in
        workout.events.filter { [.pause, .resume, .motionPaused, .motionResumed].contains($0.type) }
    }
    #expect(pauses(original).map(\.type) == pauses(copy).map(\.type), "\(label): pauses")
    for (a, b) in zip(pauses(original), pauses(copy)) {
        #expect(abs(a.start.timeIntervalSince(b.start)) < 1, "\(label): \(a.type) at \(a.start)")
    }
}
