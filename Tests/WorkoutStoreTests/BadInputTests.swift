import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

private func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

/// A store file with one saved workout, checkpointed into the main file (no -wal left).
private func populatedStore(in folder: URL) throws -> String {
    let path = folder.appendingPathComponent("store.sqlite").path
    do {
        let store = try WorkoutStore(path: path)
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 2000, heartRate: 140, maxHeartRate: 160)
        ])
        try store.save(workout, samples: samples)
    }
    let queue = try DatabaseQueue(path: path)
    try queue.writeWithoutTransaction { db in
        try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        try db.execute(sql: "PRAGMA journal_mode = DELETE")
    }
    try queue.close()
    return path
}

/// SQLite only: damaged, foreign, newer, read-only and locked database files.
@Suite("Store: bad files")
struct BadInputTests {
    @Test func aFileThatIsNotSQLite() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("notes.sqlite").path
        let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        #expect(FileManager.default.createFile(atPath: path, contents: bytes))
        #expect(throws: StoreError.notADatabase(path: path)) { try WorkoutStore(path: path) }
        #expect(contents(path) == bytes)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let message = StoreError.notADatabase(path: path).description
        #expect(message.contains(path) && message.contains("--db"))
    }

    @Test func aTruncatedDatabase() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = try populatedStore(in: folder)
        let whole = try #require(contents(path))
        let truncated = whole.prefix(whole.count / 2)
        try truncated.write(to: URL(fileURLWithPath: path))
        #expect {
            try WorkoutStore(path: path)
        } throws: { error in
            guard case StoreError.corrupt(let reported, let detail) = error else { return false }
            return reported == path && detail.contains("truncated")
        }
        #expect(contents(path) == truncated)
    }

    @Test func aDatabaseFromANewerSchema() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = try populatedStore(in: folder)
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = 99") }
        try queue.close()
        let before = try #require(contents(path))
        #expect(throws: StoreError.newerSchema(path: path, found: 99, supported: 2)) { try WorkoutStore(path: path) }
        #expect(contents(path) == before)
    }

    @Test func aPathThatCannotBeWritten() throws {
        // /proc refuses new files even to root.
        let path = "/proc/workout-engine-test/store.sqlite"
        #expect(throws: StoreError.self) { try WorkoutStore(path: path) }
        #expect(!FileManager.default.fileExists(atPath: path))
        if getuid() != 0 {
            let folder = try temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = try populatedStore(in: folder)
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: file)
            let before = contents(file)
            #expect(throws: StoreError.readOnly(path: file)) { try WorkoutStore(path: file) }
            #expect(contents(file) == before)
        }
    }

    @Test func aLockedDatabase() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = try populatedStore(in: folder)
        let before = try #require(contents(path))
        // Another program holds an exclusive lock (rollback-journal mode, as the file is now).
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: path, configuration: configuration)
        try holder.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        #expect(throws: StoreError.locked(path: path)) { try WorkoutStore(path: path, busyTimeout: 0.2) }
        #expect(contents(path) == before)
        try holder.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        try holder.close()
        // Once released, the store opens and nothing recorded was lost.
        let store = try WorkoutStore(path: path)
        #expect(try store.workouts(matching: WorkoutQuery()).count == 1)
        #expect(try store.samples(matching: SampleQuery(type: .heartRate)).count == 2000)
    }
}
