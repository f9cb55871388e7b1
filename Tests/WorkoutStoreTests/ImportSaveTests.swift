import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutFormats
import WorkoutImport
import WorkoutModel
import WorkoutStore

@Suite("Store: an import's workouts are saved without a journal, many in one transaction and each whole or not at all")
struct ImportSaveTests {
    /// A workout replayed into `store` without saving it: `count` heart-rate readings a second from `offset`.
    private func replayed(
        _ store: WorkoutStore, offset: Double, count: Int, id: UUID = UUID()
    ) throws -> ImportedWorkout {
        let recording = try store.beginImport(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(offset)),
            options: BuilderOptions(workoutID: id))
        try recording.session.start(at: t(offset))
        try recording.builder.add((0..<count).map { pulse(120 + Double($0 % 40), at: offset + Double($0)) })
        // Half of them laid out in chunks before the rest come: the chunks hold all of them, in order.
        recording.flush()
        try recording.builder.add((count..<(2 * count)).map { pulse(120 + Double($0 % 40), at: offset + Double($0)) })
        try recording.session.end(at: t(offset + Double(2 * count)))
        return try recording.complete()
    }

    @Test(arguments: Backend.available)
    func aWorkoutWhoseIdIsTakenIsLeftOutWholeAndTheOthersAreKept(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let taken = try replayed(store, offset: 0, count: 50)
        #expect(try store.saveImported([taken]) == [nil])
        // Replaying gave the store nothing: no journal, no workout until saved.
        let first = try replayed(store, offset: 1_000, count: 5_000)
        let again = try replayed(store, offset: 9_000, count: 30, id: taken.workout.id)
        let last = try replayed(store, offset: 20_000, count: 70)
        #expect(try store.journaledSessions().isEmpty)
        #expect(try store.workout(id: first.workout.id) == nil)

        let errors = try store.saveImported([first, again, last])
        #expect(errors == [nil, .workoutExists(taken.workout.id), nil])
        // The one refused wrote nothing: the workout with its id is still the first one saved, its samples only.
        #expect(try store.workout(id: taken.workout.id)?.start == t(0))
        #expect(try store.samples(workout: taken.workout.id).count == 100)
        for (item, count) in [(first, 10_000), (last, 140)] {
            let saved = try #require(try store.workout(id: item.workout.id))
            #expect(saved.statistics[.heartRate]?.sampleCount == count)
            let samples = try store.samples(workout: item.workout.id)
            #expect(samples.count == count)
            #expect(samples.map(\.start) == (0..<count).map { t(item.workout.start.timeIntervalSince(t(0)) + Double($0)) })
        }
        #expect(try store.workouts(matching: WorkoutQuery()).count == 3)
        #expect(try store.journaledSessions().isEmpty)
    }

    /// A FIT file of a 10-minute run with heart rate: 170 bpm to the end, then 130 s falling 0.5 bpm a second (a
    /// one-minute recovery of 30).
    private func runWithRecovery() -> [UInt8] {
        let start: UInt32 = 1_000_000_000
        var writer = FITWriter()
        writer.write(0, [.enumeration(0, 4), .uint16(1, 255), .uint16(2, 1), .uint32z(3, 7), .uint32(4, start)])
        writer.write(21, [.uint32(253, start), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 0)])
        for t in UInt32(0)...730 {
            writer.write(
                20,
                [
                    .uint32(253, start + t), .scaled(5, t <= 600 ? Double(t) * 3 : 1800, scale: 100, size: 4),
                    .scaled(73, t <= 600 ? 3 : 0, scale: 1000, size: 4),
                    .uint8(3, UInt8(t <= 600 ? 170 : 170 - Int(t - 600) / 2)),
                ])
        }
        writer.write(21, [.uint32(253, start + 600), .enumeration(0, 0), .enumeration(1, 4), .uint32(3, 0)])
        writer.write(
            18,
            [
                .uint32(253, start + 600), .uint32(2, start), .enumeration(5, 1),
                .scaled(7, 600, scale: 1000, size: 4), .scaled(8, 600, scale: 1000, size: 4),
            ])
        return writer.finish()
    }

    // The heart-rate recovery of an imported workout was attached in a transaction of its own after its batch was
    // saved: when that one failed, the workout stayed saved without its recovery for good (importing again is
    // refused as already imported). It is now saved with the workout, in the workout's own savepoint. Here every
    // later change of the athlete's workouts is refused by the database (a trigger), as the second transaction
    // failing.
    @Test(arguments: Backend.available)
    func anImportedWorkoutIsSavedWithItsHeartRateRecoveryOrNotAtAll(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let file = fixture.folder.appendingPathComponent("recovery.fit")
        try Data(runWithRecovery()).write(to: file)
        let trigger = "refuse_update_\(UUID().uuidString.prefix(8).lowercased())"
        try fixture.execute(
            sqlite: """
                CREATE TRIGGER \(trigger) BEFORE UPDATE ON workout
                BEGIN SELECT RAISE(ABORT, 'a saved workout changed (refused by the test)'); END
                """,
            postgres: """
                CREATE FUNCTION \(trigger)() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'a saved workout changed (refused by the test)'; END $$
                """)
        if backend == .postgres {
            try fixture.execute(
                sqlite: "",
                postgres: """
                    CREATE TRIGGER \(trigger) BEFORE UPDATE ON workout FOR EACH ROW
                    WHEN (OLD.athlete = \(fixture.athleteLiteral)::uuid) EXECUTE FUNCTION \(trigger)()
                    """)
        }
        defer {
            if backend == .postgres {
                _ = try? fixture.execute(sqlite: "", postgres: "DROP TRIGGER IF EXISTS \(trigger) ON workout")
                _ = try? fixture.execute(sqlite: "", postgres: "DROP FUNCTION IF EXISTS \(trigger)()")
            }
        }

        let results = try FileImport.runAll(path: file.path, into: fixture.store)
        #expect(results.count == 1)
        let saved = try fixture.store.workouts(matching: WorkoutQuery())
        // Saved whole (with its recovery) or not at all; here saved.
        for workout in saved {
            #expect(workout.metadata[MetadataKey.heartRateRecoveryOneMinute] != nil, "saved without its recovery")
            let types = Set(try fixture.store.samples(workout: workout.id).map(\.type))
            #expect(types.contains(.heartRateRecoveryOneMinute), "saved without its recovery sample")
        }
        let result = try #require(try results.first?.get())
        #expect(saved.map(\.id) == [result.workout.id])
        #expect(abs((result.heartRateRecovery?.oneMinuteDrop ?? 0) - 30) <= 1)
        #expect(result.workout.metadata[MetadataKey.heartRateRecoveryOneMinute] != nil)
    }

    @Test(arguments: Backend.available)
    func anImportDiscardedHalfwayLeavesNothingAndHoldsNoId(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let id = UUID()
        let recording = try store.beginImport(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)),
            options: BuilderOptions(workoutID: id))
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<100).map { pulse(130, at: Double($0)) })
        try recording.discard()
        #expect(try store.journaledSessions().isEmpty)
        #expect(try store.workouts(matching: WorkoutQuery()).isEmpty)
        // The id is free: the same workout imports.
        let again = try replayed(store, offset: 0, count: 10, id: id)
        #expect(try store.saveImported([again]) == [nil])
        #expect(try store.samples(workout: id).count == 20)
    }

    // MARK: bulk imports

    /// The statistics' value indexes of the SQLite file at `path`: name → statement, white space folded.
    private func valueIndexes(_ path: String) throws -> [String: String] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        let rows = try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'statistic'
                    AND name IN ('statistic_average', 'statistic_minimum', 'statistic_maximum', 'statistic_sum')
                    """)
        }
        return Dictionary(
            uniqueKeysWithValues: rows.map { row in
                let sql: String = row["sql"]
                return (row["name"] as String, sql.split(whereSeparator: \.isWhitespace).joined(separator: " "))
            })
    }

    /// Workouts `range` of a set, the same ids in any store: workout i a run (a ride every third) of 20 s whose
    /// heart rate averages 110 + 7 × i mod 70 bpm.
    private func batch(_ store: WorkoutStore, _ range: Range<Int>) throws -> [ImportedWorkout] {
        try range.map { i in
            let id = UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", i))
            let recording = try store.beginImport(
                configuration: WorkoutConfiguration(activityType: i % 3 == 0 ? .cycling : .running),
                clock: ManualClock(t(Double(i) * 10_000)), options: BuilderOptions(workoutID: id))
            let start = Double(i) * 10_000
            try recording.session.start(at: t(start))
            let average = Double(110 + (7 * i) % 70)
            try recording.builder.add((0..<20).map { pulse(average + Double($0 % 3) - 1, at: start + Double($0)) })
            try recording.session.end(at: t(start + 20))
            return try recording.complete()
        }
    }

    /// What the activity queries answer: ids by average, maximum, minimum (and type) of heart rate.
    private func answers(_ store: WorkoutStore) throws -> [[UUID]] {
        let bpm = QuantityUnit.countPerMinute
        return try [
            (nil, StatisticCondition(.heartRate, .average, .greaterThan, Quantity(150, bpm))),
            (.cycling, StatisticCondition(.heartRate, .maximum, .lessThan, Quantity(140, bpm))),
            (.running, StatisticCondition(.heartRate, .minimum, .greaterThan, Quantity(120, bpm))),
        ].map { (type: WorkoutActivityType?, condition) in
            try store.workoutIDs(
                matching: WorkoutQuery(activities: [ActivityPredicate(activityType: type, conditions: [condition])]))
        }
    }

    @Test func aLargeImportDropsTheValueIndexesAndMakesThemAgainWhenItEnds() throws {
        let (store, folder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (reference, referenceFolder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: referenceFolder) }
        let made = try valueIndexes(store.path)
        #expect(made.count == 4)

        let bulk = store.beginBulkImport(threshold: 3)
        var saved = 0
        for (index, range) in [0..<2, 2..<4, 4..<10, 10..<16].enumerated() {
            let workouts = try batch(store, range)
            #expect(try store.saveImported(workouts).allSatisfy { $0 == nil })
            #expect(try reference.saveImported(try batch(reference, range)).allSatisfy { $0 == nil })
            saved += range.count
            // Dropped by the first save once 3 were saved (the third batch), the store holding only the import's.
            #expect(try valueIndexes(store.path).isEmpty == (index >= 2), "after \(saved) workouts")
        }
        // Queries answer the same meanwhile, without the indexes.
        let expected = try answers(reference)
        #expect(expected.allSatisfy { !$0.isEmpty })
        #expect(try answers(store) == expected)
        try bulk.finish()
        // Made again, the statements the schema made.
        #expect(try valueIndexes(store.path) == made)
        #expect(try answers(store) == expected)
        try bulk.finish()
    }

    @Test func anImportSmallBesideTheStoreKeepsTheValueIndexes() throws {
        let (store, folder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try store.saveImported(try batch(store, 0..<30)).allSatisfy { $0 == nil })
        let bulk = store.beginBulkImport(threshold: 2)
        for range in [30..<32, 32..<34, 34..<36] {
            #expect(try store.saveImported(try batch(store, range)).allSatisfy { $0 == nil })
            // 30 workouts before it, more than four times the import's 4 when the threshold is passed: kept.
            #expect(try valueIndexes(store.path).count == 4)
        }
        try bulk.finish()
        #expect(try valueIndexes(store.path).count == 4)
    }

    @Test func valueIndexesAnImportCutShortLeftDroppedAreMadeWhenTheStoreIsOpened() throws {
        let (store, folder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let made = try valueIndexes(store.path)
        let bulk = store.beginBulkImport(threshold: 0)
        #expect(try store.saveImported(try batch(store, 0..<3)).allSatisfy { $0 == nil })
        #expect(try valueIndexes(store.path).isEmpty)
        // Another opening of the file (the next command after an import killed) makes them.
        let opened = try WorkoutStore(path: store.path)
        #expect(try valueIndexes(store.path) == made)
        #expect(try answers(opened) == answers(store))
        try bulk.finish()
        #expect(try valueIndexes(store.path) == made)
    }

    @Test func anImportThatOutgrowsTheStoreDropsTheValueIndexesWhenItHas() throws {
        let (store, folder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try store.saveImported(try batch(store, 0..<10)).allSatisfy { $0 == nil })
        let bulk = store.beginBulkImport(threshold: 2)
        // At 2 saved the store's 10 are more than four times as many: kept, asked again at 4 (10 ≤ 16: dropped).
        for (index, range) in [10..<12, 12..<14, 14..<16].enumerated() {
            #expect(try store.saveImported(try batch(store, range)).allSatisfy { $0 == nil })
            #expect(try valueIndexes(store.path).isEmpty == (index == 2), "batch \(index)")
        }
        try bulk.finish()
        #expect(try valueIndexes(store.path).count == 4)
    }

    @Test func overlappingImportsMakeTheValueIndexesAgainWhenTheLastEnds() throws {
        let (store, folder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let made = try valueIndexes(store.path)
        let first = store.beginBulkImport(threshold: 0)
        let second = store.beginBulkImport(threshold: 0)
        #expect(try store.saveImported(try batch(store, 0..<3)).allSatisfy { $0 == nil })
        #expect(try valueIndexes(store.path).isEmpty)
        try first.finish()
        #expect(try valueIndexes(store.path).isEmpty, "made again while another import was saving")
        try second.finish()
        #expect(try valueIndexes(store.path) == made)
    }

    /// Opening a store whose indexes another process's import dropped leaves them to that import (making them would
    /// hold the writer's lock for seconds under its next batch); once that process is gone, opening makes them.
    @Test func openingAStoreMakesTheValueIndexesOnlyWhenTheImportThatDroppedThemIsGone() throws {
        let (store, folder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let made = try valueIndexes(store.path)
        #expect(try store.saveImported(try batch(store, 0..<3)).allSatisfy { $0 == nil })
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        for (owner, running) in [(Int32(1), true), (gone.processIdentifier, false)] {
            let queue = try DatabaseQueue(path: store.path)
            try queue.write { db in
                for name in made.keys { try db.execute(sql: "DROP INDEX IF EXISTS \(name)") }
                try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES ('bulk_load_pid', ?)", arguments: [owner])
            }
            try queue.close()
            _ = try WorkoutStore(path: store.path)
            #expect(try valueIndexes(store.path) == (running ? [:] : made), "owner \(owner)")
        }
    }

    /// An Apple Health export of more workouts than the threshold is a bulk load: its import drops the value indexes
    /// once 1,024 workouts are saved (results handed over after that find them gone) and makes them again at its end.
    @Test func anAppleHealthImportOfManyWorkoutsIsABulkLoad() throws {
        let (store, folder) = try freshStore(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let made = try valueIndexes(store.path)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        func time(_ i: Int, _ minute: Int) -> String {
            formatter.string(from: Date(timeIntervalSince1970: 1_577_865_600 + Double(i) * 86_400 + Double(minute) * 60))
                + " +0000"
        }
        let count = 1_200
        var body = ""
        for i in 0..<count {
            body += "<Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"10\" "
                + "durationUnit=\"min\" sourceName=\"W\" startDate=\"\(time(i, 0))\" endDate=\"\(time(i, 10))\"/>\n"
        }
        let xml = folder.appendingPathComponent("export.xml")
        try Data("<HealthData locale=\"en_US\">\n\(body)</HealthData>\n".utf8).write(to: xml)
        var handed = 0
        var droppedSeen = false
        try FileImport.runEach(path: xml.path, into: store) { result in
            handed += 1
            if handed == 1_160 { droppedSeen = (try? valueIndexes(store.path).isEmpty) ?? false }
            if case .failure(let error) = result { Issue.record("\(error)") }
        }
        #expect(handed == count)
        #expect(droppedSeen)
        #expect(try valueIndexes(store.path) == made)
        #expect(try store.workoutIDs(matching: WorkoutQuery()).count == count)
    }
}
