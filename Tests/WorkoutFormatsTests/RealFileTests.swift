import Foundation
import Testing
import WorkoutEngine
import WorkoutFormats
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutStore

/// A JSON object of the device's values (`expected/<name>.json`).
struct DeviceValues {
    let object: [String: Any]

    subscript(key: String) -> Any? {
        let value = object[key]
        return value is NSNull ? nil : value
    }

    func double(_ key: String) -> Double? { (self[key] as? NSNumber)?.doubleValue }
    func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
    func string(_ key: String) -> String? { self[key] as? String }

    /// The date of an ISO 8601 value such as `2023-09-02T13:15:24Z`.
    func date(_ key: String) -> Date? {
        string(key).flatMap { try? Date($0, strategy: .iso8601) }
    }

    func list(_ key: String) -> [DeviceValues] {
        ((self[key] as? [Any]) ?? []).compactMap { ($0 as? [String: Any]).map(DeviceValues.init) }
    }
}

/// Imports every real file once (in parallel tests would import them many times on two cores).
///
/// Two imports run side by side, each on a thread of its own: on the actor every import of every suite waited for
/// the one before it (one core's work, the first pass's longest wait), and on the cooperative pool they would take
/// its threads from the in-process servers of the suites beside them.
actor ImportedFiles {
    static let shared = ImportedFiles()
    private var results: [String: Task<FileImportResult, any Error>] = [:]
    private var importing = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func result(_ name: String, autoSegment: Bool = false) async throws -> FileImportResult {
        let key = name + (autoSegment ? "+auto" : "")
        if let running = results[key] { return try await running.value }
        let running = Task { try await self.imported(name, autoSegment: autoSegment) }
        results[key] = running
        return try await running.value
    }

    private func imported(_ name: String, autoSegment: Bool) async throws -> FileImportResult {
        while importing >= 2 { await withCheckedContinuation { waiting.append($0) } }
        importing += 1
        defer {
            importing -= 1
            if !waiting.isEmpty { waiting.removeFirst().resume() }
        }
        return try await onOwnThread {
            try FileImport.runFIT(
                path: SharedData.fitPath(name), into: try temporaryStore(),
                options: ImportOptions(autoSegment: autoSegment), compare: true)
        }
    }
}

@Suite("Real device recordings")
struct RealFileTests {
    /// Same sessions and sports; per session average heart rate ±1 bpm (pool swims: over the lengths
    /// swum, as Garmin averages them, in the stored statistic), maximum exact, distance within 0.5 %, elapsed and timer time
    /// within 1 s; pool swims: lengths, active lengths and strokes exact, SWOLF ±1 per session and lap.
    @Test(arguments: SharedData.names)
    func matchesTheDevice(name: String) async throws {
        let device = DeviceValues(object: try SharedData.expected(name)["device"] as? [String: Any] ?? [:])
        let sessions = device.list("sessions").sorted {
            ($0.string("start_time") ?? "") < ($1.string("start_time") ?? "")
        }
        let result = try await ImportedFiles.shared.result(name)
        let workout = result.workout
        try #require(!sessions.isEmpty)
        #expect(result.legs.map { FITProfile.Sport.name($0.sport) } == sessions.map { $0.string("sport") ?? "-" })
        if sessions.count > 1 {
            let types = sessions.map { session -> WorkoutActivityType in
                switch session.string("sport") {
                case "swimming": .swimming
                case "transition": .transition
                case "cycling": .cycling
                case "running": .running
                default: .other
                }
            }
            #expect(workout.activities.map(\.configuration.activityType) == types)
        }
        for (index, session) in sessions.enumerated() {
            let label = "\(name) session \(index + 1) (\(session.string("sport") ?? "-"))"
            let (start, end, duration, statistics): (Date, Date, TimeInterval, [QuantityType: Statistics])
            if sessions.count == 1 {
                (start, end, duration, statistics) = (workout.start, workout.end, workout.duration, workout.statistics)
            } else {
                let activity = workout.activities[index]
                (start, end, duration, statistics) = (
                    activity.start, activity.end ?? workout.end, activity.duration, activity.statistics
                )
            }
            let comparison = try #require(result.comparison)
            let row = try #require(comparison.rows.first { $0.kind == .session && $0.number == index + 1 })
            let lengths = device.list("lengths").filter { length in
                guard let lengthStart = length.date("start_time") else { return false }
                return lengthStart >= start.addingTimeInterval(-1) && lengthStart < end
            }
            let pool = session.string("sub_sport") == "lap_swimming"
            if let average = session.double("avg_heart_rate") {
                // Pool swims too: the stored statistic leaves the rests out as Garmin does.
                let ours = statistics[.heartRate]?.average?.value
                if pool { #expect(abs((row.ours.swimmingHeartRate ?? .nan) - average) <= 1) }
                #expect(
                    abs((ours ?? .nan) - average) <= 1, "\(label): average heart rate \(ours ?? .nan) vs \(average)")
            }
            if let maximum = session.double("max_heart_rate") {
                #expect(statistics[.heartRate]?.maximum?.value == maximum, "\(label): maximum heart rate")
            }
            if let distance = session.double("total_distance"), distance > 0 {
                let ours = [QuantityType.distanceSwimming, .distanceCycling, .distanceWalkingRunning].compactMap {
                    statistics[$0]?.sum?.value
                }.reduce(0, +)
                #expect(abs(ours - distance) <= 0.005 * distance, "\(label): distance \(ours) vs \(distance)")
            }
            if let elapsed = session.double("total_elapsed_time") {
                #expect(abs(end.timeIntervalSince(start) - elapsed) <= 1, "\(label): elapsed")
            }
            if let timer = session.double("total_timer_time") {
                #expect(abs(duration - timer) <= 1, "\(label): timer time \(duration) vs \(timer)")
            }
            if let strokes = session.double("total_strokes"), session.string("sport") == "swimming" {
                #expect(statistics[.swimmingStrokeCount]?.sum?.value == strokes, "\(label): strokes")
            }
            guard pool else { continue }
            // Lengths: every length message is a length event; the lengths swum (not rests) are the
            // device's active lengths and its number of lengths, less the idle lengths its own laps
            // count (a firmware quirk of the 920XT: laps 3 and 40 count one idle length each).
            let events = workout.events.compactMap(PoolLength.init).filter { $0.start >= start && $0.start < end }
            #expect(events.count == lengths.count, "\(label): length events")
            let swum = events.filter { $0.kind != .rest }.count
            #expect(swum == session.int("num_active_lengths"), "\(label): active lengths")
            let idleCounted = device.list("laps").filter { ($0.int("num_active_lengths") ?? 0) == 0 }.map {
                $0.int("num_lengths") ?? 0
            }.reduce(0, +)
            #expect(swum == (session.int("num_lengths") ?? 0) - idleCounted, "\(label): lengths")
            #expect(
                events.filter { $0.kind == .active }.count
                    == lengths.filter { $0.string("length_type") == "active" && $0.string("swim_stroke") != "drill" }
                    .count)
            if let swolf = session.double("avg_swolf") {
                let ours = statistics[.swimmingSWOLF]?.average?.value
                #expect(abs((ours ?? .nan) - swolf) <= 1, "\(label): SWOLF \(ours ?? .nan) vs \(swolf)")
            }
            for lap in device.list("laps") {
                guard let swolf = lap.double("avg_swolf"), swolf > 0, (lap.int("num_active_lengths") ?? 0) > 0,
                    let lapStart = lap.date("start_time")
                else { continue }
                let row = comparison.rows.first { $0.kind == .lap && $0.start == lapStart }
                let ours = row?.ours.swolf
                #expect(
                    abs((ours ?? .nan) - swolf) <= 1, "\(name) lap at \(lapStart): SWOLF \(ours ?? .nan) vs \(swolf)")
                #expect(row?.ours.strokes == lap.double("total_strokes"), "\(name) lap at \(lapStart): strokes")
            }
        }
    }

    @Test func summaryFirstAndSummaryLastGiveTheSameWorkout() async throws {
        let first = try await ImportedFiles.shared.result("mk_triathlon_summary_first")
        let last = try await ImportedFiles.shared.result("mk_triathlon_summary_last")
        func normalised(_ workout: Workout) -> Workout {
            var copy = workout
            copy.id = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
            copy.metadata[ImportMetadataKey.fileName] = nil
            copy.activities = copy.activities.map { activity in
                var activity = activity
                activity.id = copy.id
                return activity
            }
            return copy
        }
        #expect(normalised(first.workout) == normalised(last.workout))
        #expect(first.comparison != nil && first.comparison == last.comparison)
        #expect(first.anomalies == last.anomalies)
        #expect(first.samplesSent == last.samplesSent && first.routePointsSent == last.routePointsSent)
    }

    @Test func theFenix2FileImportsWithItsAnomaliesReported() async throws {
        let result = try await ImportedFiles.shared.result("fp_activity-large-fenxi2-multisport")
        let kinds = Set(result.anomalies.map(\.kind))
        #expect(
            kinds.isSuperset(of: [.timestampsBackward, .duplicateTimestamps, .sessionContradiction, .counterRestarted]))
        let expected = try SharedData.expected("fp_activity-large-fenxi2-multisport")
        let records = (expected["device"] as? [String: Any])?["records"] as? [String: Any]
        let backward = result.anomalies.first { $0.kind == .timestampsBackward }?.detail ?? ""
        let duplicates = result.anomalies.first { $0.kind == .duplicateTimestamps }?.detail ?? ""
        #expect(backward.hasPrefix("\((records?["timestamp_steps_backwards"] as? Int) ?? -1) records step back"))
        #expect(duplicates.hasPrefix("\((records?["timestamp_duplicates"] as? Int) ?? -1) records repeat"))
        let contradiction = result.anomalies.first { $0.kind == .sessionContradiction }?.detail ?? ""
        #expect(contradiction.contains("session 1") && contradiction.contains("07:14:44"), "\(contradiction)")
        #expect(result.workout.activities.count == 7)
    }

    /// Issue 6's bar on real data: with automatic segmentation the legs begin within 30 s of the
    /// device's session boundaries.
    @Test(arguments: ["mk_triathlon_summary_first", "mk_triathlon_summary_last"])
    func automaticSegmentationFindsTheTriathlonsLegs(name: String) async throws {
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        let workout = result.workout
        #expect(
            workout.activities.map(\.configuration.activityType) == [
                .swimming, .transition, .cycling, .transition, .running,
            ])
        try #require(workout.activities.count == result.legs.count)
        var errors: [Double] = []
        for (activity, leg) in zip(workout.activities, result.legs) {
            errors.append(abs(activity.start.timeIntervalSince(leg.start)))
            errors.append(abs((activity.end ?? workout.end).timeIntervalSince(leg.end)))
        }
        print("\(name): automatic leg boundaries off the device's by \(errors.map { ($0 * 10).rounded() / 10 }) s")
        #expect(errors.allSatisfy { $0 <= 30 })
        #expect(
            workout.activities.dropFirst().allSatisfy { $0.metadata[MetadataKey.detectedBy] == .string("automatic") })
    }
}
