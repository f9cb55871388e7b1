import Foundation
import Testing
import WorkoutEngine
import WorkoutFormats
import WorkoutImport
import WorkoutModel
import WorkoutStore

/// Issue 24: the real Apple Health exports of ../shared/data/applehealth, against what each states
/// (expected/<name>.json, written by the data folder's own script).
@Suite("Apple Health import", .serialized)
struct AppleHealthImportTests {
    static var folder: String { (SharedData.directory as NSString).appendingPathComponent("applehealth") }

    static func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }

    /// The expected file's workouts (what the export states).
    static func expected(_ name: String) throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path("expected/\(name).json")))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(object["workouts"] as? [[String: Any]])
    }

    func importAll(_ name: String, into store: WorkoutStore) throws -> [Result<FileImportResult, FileImportError>] {
        try FileImport.runAll(path: Self.path(name), into: store, compare: true)
    }

    /// Per activity: duration and every stated statistic agree with expected/ (HR, distance, energy,
    /// power, speed), and the query finds the session by an activity averaging over 150 bpm.
    @Test func theIntervalRunsActivitiesKeepTheirOwnStatistics() throws {
        let store = try temporaryStore()
        let results = try importAll("nr_fragments/workout_running_multiple_parts.xml", into: store)
        try #require(results.count == 1)
        let workout = try results[0].get().workout
        let expected = try #require(try Self.expected("nr_workout_running_multiple_parts").first)
        let activities = try #require(expected["activities"] as? [[String: Any]])
        try #require(workout.activities.count == activities.count)
        #expect(workout.activities.count == 17)
        for (activity, stated) in zip(workout.activities, activities) {
            let duration = try #require(stated["duration_s"] as? Double)
            #expect(abs(activity.duration - duration) <= 1, "\(activity.duration) vs \(duration)")
            for statistic in (stated["statistics"] as? [[String: Any]]) ?? [] {
                let type = try #require(statistic["type"] as? String)
                guard let quantityType = QuantityType(healthKitIdentifier: type) else {
                    Issue.record("no quantity type for \(type)")
                    continue
                }
                let ours = try #require(activity.statistics[quantityType], "\(type)")
                let unit = try #require(statistic["unit"] as? String)
                func check(_ field: String, _ value: Quantity?) throws {
                    guard let stated = statistic[field] as? Double else { return }
                    let ourValue = try #require(value, "\(type) \(field)")
                    let statedUnit = try #require(HealthUnitsForTests.unit(unit))
                    let converted = try #require(ourValue.doubleValue(for: statedUnit))
                    #expect(abs(converted - stated) <= max(0.01, abs(stated) * 0.001), "\(type) \(field)")
                }
                try check("sum", ours.sum)
                try check("average", ours.average)
                try check("minimum", ours.minimum)
                try check("maximum", ours.maximum)
            }
        }
        // The activities averaging over 150 bpm, by what the export states.
        let above = activities.filter { activity in
            ((activity["statistics"] as? [[String: Any]]) ?? []).contains {
                ($0["type"] as? String) == "HKQuantityTypeIdentifierHeartRate" && (($0["average"] as? Double) ?? 0) > 150
            }
        }
        #expect(above.count == 3)
        let found = try store.workouts(
            matching: WorkoutQuery(
                activities: [
                    ActivityPredicate(
                        activityType: .running,
                        conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(150, .countPerMinute))])
                ]))
        #expect(found.map(\.id) == [workout.id])
        let none = try store.workouts(
            matching: WorkoutQuery(
                activities: [
                    ActivityPredicate(
                        activityType: .running,
                        conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(160, .countPerMinute))])
                ]))
        #expect(none.isEmpty)
    }

    /// The pool swim keeps its 15 lengths with stroke style and SWOLF, Apple's 9 sets, and the
    /// workout's SWOLF; strokes come back from Apple's SWOLF (seconds + strokes).
    @Test func thePoolSwimKeepsItsLengthsSetsAndSWOLF() throws {
        let store = try temporaryStore()
        let result = try #require(try importAll("nr_fragments/workout_swimming.xml", into: store).first).get()
        let workout = result.workout
        let lengths = workout.events.compactMap(PoolLength.init)
        #expect(lengths.count == 15)
        #expect(lengths.filter { $0.style == "breaststroke" }.count == 13)
        #expect(lengths.filter { $0.style == "freestyle" }.count == 1)
        // Every length with Apple's SWOLF keeps it (ours = seconds + the recovered strokes).
        let swolfs = workout.events.filter { PoolLength($0) != nil }.compactMap { $0.metadata[SwimMetadataKey.swolf]?.numberValue }
        #expect(swolfs.count == 14)
        let stated = workout.events.filter { PoolLength($0) != nil }.compactMap {
            $0.metadata["Health.HKSWOLFScore"]?.stringValue.flatMap(Double.init)
        }
        for (ours, apple) in zip(swolfs, stated) { #expect(abs(ours - apple) < 0.01) }
        let sets = workout.events.filter { $0.type == .segment && $0.metadata["Health.HKSWOLFScore"] != nil }
        #expect(sets.count == 9)
        let swolf = try #require(workout.statistics[.swimmingSWOLF]?.average?.value)
        #expect(abs(swolf - stated.reduce(0, +) / Double(stated.count)) < 0.01)
        #expect(workout.statistics[.distanceSwimming]?.sum?.doubleValue(for: .meter) == 750)
        #expect(workout.configuration.lapLength == Quantity(50, .meter))
        let duration = try #require(try Self.expected("nr_workout_swimming").first?["duration_s"] as? Double)
        #expect(workout.metadata[HealthMetadataKey.duration]?.numberValue.map { abs($0 - duration) < 0.01 } == true)
        #expect(workout.metadata[HealthMetadataKey.timeZone] == .string("Europe/Luxembourg"))
    }

    /// Every file imports or is refused with its reason; each workout's duration agrees with what
    /// the export states (Apple's duration excludes pauses; ours is the engine's active time).
    @Test(arguments: [
        ("js_export.zip", "js_export"), ("hk_export.xml", "hk_export"), ("od_sampleexport-2.xml", "od_sampleexport-2"),
        ("ds_export.xml", "ds_export"), ("ds_zip_contents", "ds_zip_contents"),
        ("nr_fragments/workout_cycling.xml", "nr_workout_cycling"), ("nr_fragments/workout_running.xml", "nr_workout_running"),
        ("nr_fragments/workout_running_usaint_bolt.xml", "nr_workout_running_usaint_bolt"),
        ("nr_fragments/workout_strength.xml", "nr_workout_strength"), ("nr_fragments/workout_walking.xml", "nr_workout_walking"),
    ])
    func everyWorkoutImportsWithItsDuration(file: String, expectedName: String) throws {
        let store = try temporaryStore()
        let results = try importAll(file, into: store)
        let expected = try Self.expected(expectedName)
        #expect(results.count == expected.count)
        for (result, stated) in zip(results, expected) {
            let imported = try result.get()
            let wall = try #require(stated["wall_clock_s"] as? Double)
            #expect(abs(imported.workout.end.timeIntervalSince(imported.workout.start) - wall) < 0.5)
            let duration = try #require(stated["duration_s"] as? Double)
            let apple = try #require(imported.workout.metadata[HealthMetadataKey.duration]?.numberValue)
            #expect(abs(apple - duration) < 0.01)
            // Ours is recomputed from the pause events; where the export's duration differs from its
            // window without any pause to explain it (a third-party app's own figure), only Apple's
            // figure exists, kept above as the device's.
            let pauses = imported.workout.events.contains { $0.type == .pause }
            if wall > 0, duration <= wall + 1, pauses || abs(wall - duration) <= 1 {
                #expect(abs(imported.workout.duration - duration) <= 1.5, "\(file) \(imported.workout.duration) vs \(duration)")
            }
        }
        // Importing again stores nothing new.
        let again = try importAll(file, into: store)
        #expect(again.allSatisfy { if case .failure(.alreadyImported) = $0 { true } else { false } })
    }

    @Test func recordsInAWorkoutsWindowBecomeItsHeartRate() throws {
        let store = try temporaryStore()
        let results = try importAll("hk_export.xml", into: store)
        let expected = try Self.expected("hk_export")
        for (result, stated) in zip(results, expected) {
            let imported = try result.get()
            guard let derived = (stated["derived"] as? [String: Any])?["hr_records_in_window"] as? [String: Any],
                let count = derived["count"] as? Int, count > 0
            else { continue }
            let heartRate = try #require(imported.workout.statistics[.heartRate])
            #expect(heartRate.sampleCount == count)
            #expect(heartRate.maximum?.value == derived["max"] as? Double)
            #expect(heartRate.minimum?.value == derived["min"] as? Double)
        }
        let details = try #require(try results.first?.get().details as? HealthImportDetails)
        #expect(details.counts.records == 10939)
        #expect(details.counts.recordsLeftOut > 0)
    }

    @Test func badInputIsRefusedWithWhatAndWhere() throws {
        let store = try temporaryStore()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("health-bad-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Not well-formed (an attribute name with a space, as in the 2015 exports).
        let broken = folder.appendingPathComponent("export.xml")
        try Data("<HealthData>\n <Record type=\"x\" Health Mate=\"2\"/>\n</HealthData>\n".utf8).write(to: broken)
        #expect {
            _ = try FileImport.runAll(path: broken.path, into: store)
        } throws: { error in
            "\(error)".contains("line 2")
        }
        // A zip cut short.
        let zip = try Data(contentsOf: URL(fileURLWithPath: Self.path("js_export.zip")))
        let cut = folder.appendingPathComponent("cut.zip")
        try zip.prefix(zip.count / 2).write(to: cut)
        #expect(throws: FileImportError.self) { _ = try FileImport.runAll(path: cut.path, into: store) }
        // A damaged workout is refused whole; the next one is imported.
        let two = folder.appendingPathComponent("two.xml")
        try Data(
            """
            <HealthData locale="en_US">
             <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="x" durationUnit="min" sourceName="W" startDate="2020-01-01 10:00:00 +0000" endDate="2020-01-01 10:30:00 +0000"/>
             <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30" durationUnit="min" sourceName="W" startDate="20200102100000+0000" endDate="2020-01-02 10:30:00 +0000"/>
            </HealthData>
            """.utf8
        ).write(to: two)
        let results = try FileImport.runAll(path: two.path, into: store)
        #expect(results.count == 2)
        if case .failure(let error) = results[0] { #expect(error.description.contains("line 2")) } else {
            Issue.record("the damaged workout was imported")
        }
        #expect((try? results[1].get()) != nil)
        #expect(try store.workouts(matching: WorkoutQuery()).count == 1)
    }

    /// `--compare`'s per-check summary for an export: each workout by its rows; a figure only Apple gives
    /// (no samples in the export to recompute it) is no check, one ours recomputes is.
    @Test func theComparisonSummaryChecksOnlyTheFiguresWeRecompute() throws {
        let store = try temporaryStore()
        let result = try #require(try importAll("nr_fragments/workout_swimming.xml", into: store).first?.get())
        var summary = FidelitySummary()
        summary.add(file: "swim", rows: try #require(result.comparisonRows))
        #expect(summary.files == 1)
        func check(_ name: String) -> FidelitySummary.Check? { summary.checks.first { $0.name == name } }
        // The export holds no heart-rate record: Apple's average (102.834) is the only one.
        #expect(check("avg HR")?.total == 0)
        // Our distance comes from the 15 lengths of 50 m, Apple states 750 m.
        #expect(check("distance")?.total == 1)
        #expect(check("distance")?.agree == 1)
        #expect(check("elapsed")?.total == 1)
    }

    /// `ImportOptions` as the server's upload path sets them: a salt gives the workout another id (and the
    /// same export imported before without it counts as already there); the bounds refuse a workout and say
    /// what to check, and the others are imported.
    @Test func theServersSaltAndBoundsApplyToEachWorkout() throws {
        let swim = Self.path("nr_fragments/workout_swimming.xml")
        let store = try temporaryStore()
        let plain = try #require(try FileImport.runAll(path: swim, into: store).first?.get())
        let again = try FileImport.runAll(path: swim, into: store, options: ImportOptions(idSalt: 99))
        #expect(again.count == 1)
        if case .failure(.alreadyImported(_, let id))? = again.first { #expect(id == plain.workout.id) } else {
            Issue.record("the salted import of a stored export was not refused as already there: \(again)")
        }
        let salted = try #require(
            try FileImport.runAll(path: swim, into: try temporaryStore(), options: ImportOptions(idSalt: 99)).first?.get())
        #expect(salted.workout.id != plain.workout.id)
        let early = try FileImport.runAll(
            path: swim, into: try temporaryStore(), options: ImportOptions(latestEnd: Date(timeIntervalSince1970: 0)))
        if case .failure(let error)? = early.first { #expect(error.description.contains("check the device's clock")) } else {
            Issue.record("a workout ending after latestEnd was imported")
        }
        let short = try FileImport.runAll(path: swim, into: try temporaryStore(), options: ImportOptions(longestSpan: 600))
        if case .failure(let error)? = short.first { #expect(error.description.contains("longer than")) } else {
            Issue.record("a workout longer than longestSpan was imported")
        }
    }

    /// Records are matched to workouts through an hourly index; a workout longer than the index's four
    /// days is checked for every record, so its heart rate is still found (and a short one beside it
    /// keeps only its own).
    @Test func aWorkoutLongerThanFourDaysKeepsTheRecordsInItsWindow() throws {
        let folder = try temporaryFolder("health-long")
        let xml = folder.appendingPathComponent("export.xml")
        func record(_ time: String, _ value: Int) -> String {
            "<Record type=\"HKQuantityTypeIdentifierHeartRate\" sourceName=\"W\" unit=\"count/min\" value=\"\(value)\" "
                + "startDate=\"\(time) +0000\" endDate=\"\(time) +0000\"/>"
        }
        try Data(
            """
            <HealthData locale="en_US">
             \(record("2020-01-05 12:00:00", 100))
             \(record("2020-01-05 12:00:30", 110))
             \(record("2020-01-08 09:10:00", 150))
             <Workout workoutActivityType="HKWorkoutActivityTypeHiking" duration="12960" durationUnit="min" sourceName="W" startDate="2020-01-01 00:00:00 +0000" endDate="2020-01-10 00:00:00 +0000"/>
             <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30" durationUnit="min" sourceName="W" startDate="2020-01-08 09:00:00 +0000" endDate="2020-01-08 09:30:00 +0000"/>
            </HealthData>
            """.utf8
        ).write(to: xml)
        let results = try FileImport.runAll(path: xml.path, into: try temporaryStore())
        #expect(results.count == 2)
        let hike = try #require(try results.first?.get().workout.statistics[.heartRate])
        #expect(hike.sampleCount == 3)
        #expect(hike.maximum?.value == 150)
        let run = try #require(try results.last?.get().workout.statistics[.heartRate])
        #expect(run.sampleCount == 1)
    }

    /// An export of more workouts than a batch holds: while one batch is saved on a thread of its own the next is
    /// replayed, and every workout's result still comes once, in the file's order, the copy of a workout of an
    /// earlier batch (saved or still being saved) refused as already imported.
    @Test func anExportOfSeveralBatchesIsHandedOverInFileOrderEachWorkoutOnce() throws {
        let folder = try temporaryFolder("health-batches")
        let xml = folder.appendingPathComponent("export.xml")
        let count = 300  // two batches of 128 and some
        let copied = 5
        let copy = count - 50
        func day(_ i: Int) -> Int { i == copy ? copied : i }
        func time(_ i: Int, _ minute: Int) -> String {
            let base = Date(timeIntervalSince1970: 1_577_865_600 + Double(day(i)) * 86_400 + Double(minute) * 60)
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
            return formatter.string(from: base) + " +0000"
        }
        var body = ""
        for i in 0..<count where i != copy {
            for minute in [2, 6] {
                body += "<Record type=\"HKQuantityTypeIdentifierHeartRate\" sourceName=\"W\" unit=\"count/min\" "
                    + "value=\"\(100 + i % 50 + minute)\" startDate=\"\(time(i, minute))\" "
                    + "endDate=\"\(time(i, minute))\"/>\n"
            }
        }
        for i in 0..<count {
            body += "<Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"10\" "
                + "durationUnit=\"min\" sourceName=\"W\" startDate=\"\(time(i, 0))\" endDate=\"\(time(i, 10))\"/>\n"
        }
        try Data("<HealthData locale=\"en_US\">\n\(body)</HealthData>\n".utf8).write(to: xml)
        let store = try temporaryStore()
        var results: [Result<FileImportResult, FileImportError>] = []
        try FileImport.runEach(path: xml.path, into: store) { results.append($0) }
        #expect(results.count == count)
        let first = try results[copied].get().workout
        for (i, result) in results.enumerated() {
            if i == copy {
                guard case .failure(.alreadyImported(_, let id)) = result else {
                    Issue.record("the copy of workout \(copied): \(result)")
                    continue
                }
                #expect(id == first.id)
                continue
            }
            let workout = try result.get().workout
            #expect(workout.start == Date(timeIntervalSince1970: 1_577_865_600 + Double(i) * 86_400), "workout \(i)")
            #expect(workout.statistics[.heartRate]?.sampleCount == 2, "workout \(i)")
            #expect(workout.statistics[.heartRate]?.maximum?.value == Double(106 + i % 50), "workout \(i)")
        }
        #expect(try store.workoutIDs(matching: WorkoutQuery()).count == count - 1)
    }

    /// Issue 24: a phone's records cover minutes, so one can straddle a pause or an activity's end. The
    /// generated 200 MB export refused 122 workouts ("cannot pause at …", "cannot move an activity's end
    /// at …"): a record that followed the straddling one in the same replay step settled it into the
    /// statistics before the pause or end arrived. Each record now counts for the active time it covers.
    @Test func recordsStraddlingAPauseOrAnActivitysEndCountForTheirActiveShare() throws {
        let folder = try temporaryFolder("health-straddle")
        let xml = folder.appendingPathComponent("export.xml")
        let phone = "sourceName=\"Simon’s iPhone\" sourceVersion=\"10.3.1\" device=\"&lt;&lt;HKDevice: 0x1746862c0&gt;, "
            + "name:iPhone, manufacturer:Apple, model:iPhone, hardware:iPhone8,1, software:10.3.1&gt;\""
        func record(_ type: String, _ unit: String, _ from: String, _ to: String, _ value: String) -> String {
            "<Record type=\"HKQuantityTypeIdentifier\(type)\" \(phone) unit=\"\(unit)\" creationDate=\"\(to) +0000\" "
                + "startDate=\"\(from) +0000\" endDate=\"\(to) +0000\" value=\"\(value)\"/>"
        }
        let watch = "sourceName=\"Apple Watch\" sourceVersion=\"11.5\""
        try Data(
            """
            <HealthData locale="en_US">
             \(record("StepCount", "count", "2025-07-14 10:09:00", "2025-07-14 10:11:00", "120"))
             \(record("StepCount", "count", "2025-07-14 10:11:00", "2025-07-14 10:13:00", "100"))
             \(record("StepCount", "count", "2025-07-14 10:13:00", "2025-07-14 10:14:00", "60"))
             \(record("DistanceWalkingRunning", "km", "2025-07-14 11:19:00", "2025-07-14 11:20:40", "0.1"))
             \(record("DistanceWalkingRunning", "km", "2025-07-14 11:19:30", "2025-07-14 11:19:50", "0.02"))
             <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="28" durationUnit="min" \(watch) creationDate="2025-07-14 10:30:05 +0000" startDate="2025-07-14 10:00:00 +0000" endDate="2025-07-14 10:30:00 +0000">
              <WorkoutEvent type="HKWorkoutEventTypePause" date="2025-07-14 10:10:00 +0000"/>
              <WorkoutEvent type="HKWorkoutEventTypeResume" date="2025-07-14 10:12:00 +0000"/>
             </Workout>
             <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="21" durationUnit="min" \(watch) creationDate="2025-07-14 11:21:05 +0000" startDate="2025-07-14 11:00:00 +0000" endDate="2025-07-14 11:21:00 +0000">
              <WorkoutActivity uuid="0C822588-0470-4F37-9676-C324BF454FBE" startDate="2025-07-14 11:00:00 +0000" endDate="2025-07-14 11:20:00 +0000" duration="20" durationUnit="min">
              </WorkoutActivity>
             </Workout>
            </HealthData>
            """.utf8
        ).write(to: xml)
        let results = try FileImport.runAll(path: xml.path, into: try temporaryStore())
        #expect(results.count == 2)
        // Paused 10:10–10:12: the first record's minute before the pause (60 of 120 steps) and the second's
        // minute after it (50 of 100) count, the third whole.
        let paused = try #require(try results.first?.get().workout)
        #expect(paused.duration == 28 * 60)
        let steps = try #require(paused.statistics[.stepCount])
        #expect(steps.sampleCount == 3)
        #expect(abs((steps.sum?.value ?? 0) - 170) < 1e-9)
        // The activity ends at 11:20:00: 60 of the first record's 100 seconds (60 of 100 m) and the second
        // record whole (20 m) are its; the workout has both records whole.
        let split = try #require(try results.last?.get().workout)
        #expect(abs((split.statistics[.distanceWalkingRunning]?.sum?.value ?? 0) - 120) < 1e-6)
        let activity = try #require(split.activities.first)
        #expect(abs((activity.statistics[.distanceWalkingRunning]?.sum?.value ?? 0) - 80) < 1e-6)
    }
}

/// Apple's unit symbols for the tests' own conversions.
enum HealthUnitsForTests {
    static func unit(_ symbol: String) -> QuantityUnit? {
        switch symbol {
        case "Cal": .kilocalorie
        case "km/hr": .kilometerPerHour
        default: QuantityUnit(symbol: symbol)
        }
    }
}
