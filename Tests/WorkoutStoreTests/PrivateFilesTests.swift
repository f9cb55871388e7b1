import Foundation
import GRDB
import Testing
import WorkoutModel
import WorkoutStore

/// A store is private by default: folder 0700, database, WAL and shared-memory files 0600; an
/// existing store others can read is reported with the fix, never chmodded. SQLite only (files).
@Suite("Store: private files")
struct PrivateFilesTests {
    func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }

    @Test func aNewStoresFolderAndFilesAreReadableByTheUserOnly() throws {
        let base = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: base) }
        // The default layout: a folder the store creates, with a parent that is missing too.
        let folder = base.appendingPathComponent("data/workout-engine")
        let path = folder.appendingPathComponent("workouts.sqlite").path
        let store = try WorkoutStore(path: path)
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 30, heartRate: 140, maxHeartRate: 150)
        ])
        try store.save(workout, samples: samples)
        #expect(mode(folder.path) == 0o700)
        #expect(mode(path) == 0o600)
        // WAL mode: the write-ahead log and shared memory exist while the store is open.
        #expect(mode(path + "-wal") == 0o600)
        #expect(mode(path + "-shm") == 0o600)
        #expect(StoreFiles.permissionWarning(path: path) == nil)
        // A journaled recording writes through the same files.
        let recording = try store.beginRecording(configuration: WorkoutConfiguration(activityType: .running))
        try recording.commit()
        try recording.discard()
        #expect(mode(path + "-wal") == 0o600)
    }

    @Test func aWorldReadableStoreGetsAWarningWithTheFixAndKeepsItsModes() throws {
        let base = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: base) }
        let folder = base.appendingPathComponent("workout-engine")
        let path = folder.appendingPathComponent("workouts.sqlite").path
        do { _ = try WorkoutStore(path: path) }
        // As earlier versions left it.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        _ = try WorkoutStore(path: path)
        let warning = try #require(StoreFiles.permissionWarning(path: path))
        #expect(warning.contains("chmod 600 \(path)"))
        #expect(warning.contains("chmod 700 \(folder.path)"))
        // Opening it changed nothing: the user decides.
        #expect(mode(path) == 0o644)
        #expect(mode(folder.path) == 0o755)
        // The fix the warning gives works.
        let command = try #require(warning.components(separatedBy: "run: ").last)
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", command]
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        #expect(StoreFiles.permissionWarning(path: path) == nil)
    }

    @Test func aSharedFolderTheUserChoseIsNeitherChangedNorReported() throws {
        let base = try temporaryFolder()  // an existing folder, 0755 as the user made it
        defer { try? FileManager.default.removeItem(at: base) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: base.path)
        let path = base.appendingPathComponent("mine.sqlite").path
        _ = try WorkoutStore(path: path)
        #expect(mode(base.path) == 0o755)
        #expect(mode(path) == 0o600)
        #expect(StoreFiles.permissionWarning(path: path) == nil)
    }

    /// SQLite only: earlier versions of the store were SQLite files.
    @Test func metadataStoredInTheFormOfEarlierVersionsIsStillRead() throws {
        let (store, folder) = try freshStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)
        ])
        try store.save(workout, samples: samples)
        // Rewrite the row as an earlier version stored it (Swift's synthesised enum coding).
        let old =
            #"{"ImportDevice":{"string":{"_0":"Garmin product 1765"}},"Strokes":{"int":{"_0":28}},"SWOLF":{"double":{"_0":40}}}"#
        let queue = try DatabaseQueue(path: store.path)
        try queue.write { db in
            try db.execute(
                sql: "UPDATE workout SET metadata = ? WHERE uuid = ?", arguments: [old, workout.id.uuidString])
            #expect(db.changesCount == 1)
        }
        try queue.close()
        let read = try #require(try WorkoutStore(path: store.path).workout(id: workout.id))
        #expect(read.metadata["ImportDevice"] == .string("Garmin product 1765"))
        #expect(read.metadata["Strokes"] == .int(28))
        #expect(read.metadata["SWOLF"] == .double(40))
    }
}
