import Foundation
import GRDB
import Testing

@testable import WorkoutStore

/// `DirectInsert` binds a row's values with SQLite's own calls: the row holds exactly the values bound (nil as
/// NULL, text whole), and a run with a parameter left unbound throws instead of writing the last row's value.
@Suite("Store: direct binding")
struct DirectInsertTests {
    static func database() throws -> (DatabaseQueue, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("direct-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: folder.appendingPathComponent("t.sqlite").path)
        try queue.write { db in try db.execute(sql: "CREATE TABLE t(a INTEGER, b REAL, c TEXT, d REAL)") }
        return (queue, folder)
    }

    @Test func aRowHoldsTheValuesBoundNilAsNull() throws {
        let (queue, folder) = try Self.database()
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = "Apple Watch de Zoë 😀 \"quoted\""
        try queue.write { db in
            let statement = try db.cachedStatement(sql: "INSERT INTO t(a, b, c, d) VALUES (?, ?, ?, ?)")
            var row = DirectInsert(statement)
            row.bind(Int64(-7))
            row.bind(0.1 + 0.2)
            row.bind(text)
            row.bind(nil as Double?)
            try row.run()
        }
        let row = try #require(try queue.read { db in try Row.fetchOne(db, sql: "SELECT a, b, c, d FROM t") })
        #expect(row["a"] as Int64 == -7)
        #expect((row["b"] as Double).bitPattern == (0.1 + 0.2).bitPattern)
        #expect(row["c"] as String == text)
        #expect(row["d"] as Double? == nil)
    }

    @Test func aParameterLeftUnboundThrowsAndWritesNothing() throws {
        let (queue, folder) = try Self.database()
        defer { try? FileManager.default.removeItem(at: folder) }
        try queue.write { db in
            let statement = try db.cachedStatement(sql: "INSERT INTO t(a, b, c, d) VALUES (?, ?, ?, ?)")
            var first = DirectInsert(statement)
            first.bind(Int64(1))
            first.bind(2.0)
            first.bind("three")
            first.bind(4.0)
            try first.run()
            // The next row binds three of four: the fourth would be the first row's 4.0.
            var second = DirectInsert(statement)
            second.bind(Int64(5))
            second.bind(6.0)
            second.bind("seven")
            #expect(throws: DatabaseError.self) { try second.run() }
        }
        let count = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") }
        #expect(count == 1)
    }
}
