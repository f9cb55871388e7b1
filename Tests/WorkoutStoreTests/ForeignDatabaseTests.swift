import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

@Suite("Store: a SQLite file that is not a store")
struct ForeignDatabaseTests {
    // Opening a foreign SQLite file threw but had already converted it to WAL.
    @Test func openingAForeignDatabaseThrowsAndModifiesIt() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("other.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "CREATE TABLE meta(a TEXT); INSERT INTO meta VALUES ('x')") }
        try queue.close()
        let before = try #require(FileManager.default.contents(atPath: path))
        #expect(throws: StoreError.notAWorkoutStore(path: path)) { try WorkoutStore(path: path) }
        #expect(FileManager.default.contents(atPath: path) == before, "the file was modified")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }
}
