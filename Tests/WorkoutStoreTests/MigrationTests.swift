import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// A store written by the schema-1 build (row per sample): two recorded rides (one finished, one
/// killed while recording, its journal left), and two imported FIT files with routes. Made with the
/// v1 `workout` tool (debug-record, import), WAL checkpointed.
private func v1Fixture() throws -> (path: String, folder: URL) {
    let folder = try temporaryFolder()
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/v1-store.sqlite.gz")
    let path = folder.appendingPathComponent("v1.sqlite").path
    let gunzip = Process()
    gunzip.executableURL = URL(fileURLWithPath: "/bin/sh")
    gunzip.arguments = ["-c", "gzip -dc \"$0\" > \"$1\"", source.path, path]
    try gunzip.run()
    gunzip.waitUntilExit()
    #expect(gunzip.terminationStatus == 0)
    return (path, folder)
}

/// What the v1 tables hold, read with plain SQL (not through the store).
private struct V1Contents {
    var samples: [String: [QuantitySample]] = [:]  // by workout uuid, in id order
    var route: [String: [RoutePoint]] = [:]  // by workout uuid, in rowid order
    var tables: [String: [[DatabaseValue]]] = [:]
    var recording: String = ""

    static let kept = ["workout", "activity", "statistic", "event", "meta", "deleted_object", "journal_session", "source"]

    init(_ path: String) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.read { db in
            for table in Self.kept {
                tables[table] = try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY rowid").map {
                    Array($0.databaseValues)
                }
            }
            recording = try String.fetchOne(db, sql: "SELECT uuid FROM workout WHERE recording = 1") ?? ""
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT w.uuid, s.type, s.start, s."end", s.value, s.unit, src.name, src.manufacturer, src.model,
                           src.identifier
                    FROM sample s JOIN workout w ON w.id = s.workout_id JOIN source src ON src.id = s.source_id
                    ORDER BY s.id
                    """)
            for row in rows {
                let sample = QuantitySample(
                    type: try #require(QuantityType(rawValue: row[1])),
                    quantity: Quantity(row[4], try #require(QuantityUnit(symbol: row[5]))),
                    start: Date(timeIntervalSinceReferenceDate: row[2]), end: Date(timeIntervalSinceReferenceDate: row[3]),
                    source: SourceDevice(name: row[6], manufacturer: row[7], model: row[8], identifier: row[9]))
                samples[row[0], default: []].append(sample)
            }
            let points = try Row.fetchAll(
                db,
                sql: """
                    SELECT w.uuid, r.date, r.latitude, r.longitude, r.altitude, r.speed, r.course, r.horizontal_accuracy
                    FROM route_point r JOIN workout w ON w.id = r.workout_id ORDER BY r.rowid
                    """)
            for row in points {
                route[row[0], default: []].append(
                    RoutePoint(
                        date: Date(timeIntervalSinceReferenceDate: row[1]), latitude: row[2], longitude: row[3],
                        altitude: row[4], speed: row[5], course: row[6], horizontalAccuracy: row[7]))
            }
        }
    }
}

/// SQLite only: schema 1 existed only as SQLite files (PostgreSQL starts at its own migration 1).
@Suite("Store: migration from schema 1")
struct MigrationTests {
    @Test("a v1 store migrates in place: every sample, route point, row and anchor; the v1 journal recovers")
    func v1StoreMigratesInPlace() throws {
        let (path, folder) = try v1Fixture()
        defer { try? FileManager.default.removeItem(at: folder) }
        let before = try V1Contents(path)
        #expect(before.samples.values.reduce(0) { $0 + $1.count } == 5978)
        #expect(before.route.values.reduce(0) { $0 + $1.count } == 1241)

        let store = try WorkoutStore(path: path)
        let queue = try DatabaseQueue(path: path)
        let (version, tables) = try queue.read { db in
            (
                try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0,
                try Dictionary(
                    uniqueKeysWithValues: V1Contents.kept.map { table in
                        (
                            table,
                            try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY rowid").map {
                                Array($0.databaseValues)
                            }
                        )
                    })
            )
        }
        try queue.close()
        #expect(version == 2)
        #expect(tables == before.tables, "workouts, activities, statistics, events, anchors and journal kept as they were")

        let finished = try store.workouts(matching: WorkoutQuery())
        #expect(finished.count == 3)
        for workout in finished {
            let key = workout.id.uuidString
            let saved = before.samples[key] ?? []
            // The v1 order: start, then the order written.
            let indexed: [(offset: Int, element: QuantitySample)] = Array(saved.enumerated())
            let expected = indexed.sorted { (a, b) -> Bool in
                a.element.start != b.element.start ? a.element.start < b.element.start : a.offset < b.offset
            }.map(\.element)
            #expect(try store.samples(workout: workout.id) == expected, "\(key)")
            let points: [(offset: Int, element: RoutePoint)] = Array((before.route[key] ?? []).enumerated())
            let route = points.sorted { (a, b) -> Bool in
                a.element.date != b.element.date ? a.element.date < b.element.date : a.offset < b.offset
            }.map(\.element)
            #expect(try store.route(workout: workout.id) == route, "\(key)")
        }

        // The recording left in the v1 journal: recovered with exactly its committed samples, in order.
        let journaled = try #require(before.samples[before.recording])
        let recovered = try #require(try store.recoverActiveSession(clock: ManualClock(t(0)), commitInterval: 0))
        #expect(recovered.id.uuidString == before.recording)
        #expect(try recovered.committedSamples() == journaled)
        #expect(recovered.builder.counters.accepted == journaled.count)
    }

    @Test("a v1 sample whose source row is missing fails the migration instead of being dropped")
    func v1SampleWithoutItsSourceFailsTheMigration() throws {
        let (path, folder) = try v1Fixture()
        defer { try? FileManager.default.removeItem(at: folder) }
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "UPDATE sample SET source_id = 999999 WHERE id = 77")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        try queue.close()
        let bytes = try #require(FileManager.default.contents(atPath: path))
        #expect {
            try WorkoutStore(path: path)
        } throws: { error in
            guard case .migrationFailed(let failed, let detail) = error as? StoreError else { return false }
            return failed == path && detail.contains("1 samples")
        }
        #expect(FileManager.default.contents(atPath: path) == bytes, "the file was modified")
    }

    @Test("a migration that fails leaves the file byte-identical and says why")
    func failedMigrationLeavesTheFileAsItWas() throws {
        let (path, folder) = try v1Fixture()
        defer { try? FileManager.default.removeItem(at: folder) }
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "UPDATE sample SET metadata = '{not json' WHERE id = 77")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        try queue.close()
        let bytes = try #require(FileManager.default.contents(atPath: path))
        for _ in 0..<2 {
            #expect {
                try WorkoutStore(path: path)
            } throws: { error in
                guard case .migrationFailed(let failed, let detail) = error as? StoreError else { return false }
                return failed == path && detail.contains("sample 77")
            }
            #expect(FileManager.default.contents(atPath: path) == bytes, "the file was modified")
        }
    }
}
