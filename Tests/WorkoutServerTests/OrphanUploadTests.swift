import Foundation
import NIOCore
import Testing

@testable import WorkoutServer

/// Files left in `uploads/` by a crash are removed when the server starts; a file an upload in progress holds
/// (another server sharing the data folder) is left alone (issue 27).
@Suite("orphaned upload files")
struct OrphanUploadTests {
    @Test func filesLeftByACrashAreRemovedAtStartAndAnUploadInProgressKeepsItsFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-orphans-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let spool = UploadSpool(dataFolder: folder)
        // An upload in progress, as a running server holds it (written and locked through the same spool).
        let inProgress = try spool.create()
        defer { inProgress.close() }
        try inProgress.append(ByteBuffer(bytes: [0x0E, 0x10]))
        // What a crash leaves: a file nobody holds, with a name as the server gives them and another.
        let orphans = [
            (spool.folder as NSString).appendingPathComponent("\(UUID().uuidString).fit"),
            (spool.folder as NSString).appendingPathComponent("partial.fit"),
        ]
        for orphan in orphans {
            #expect(FileManager.default.createFile(atPath: orphan, contents: Data(repeating: 7, count: 1000)))
        }
        let server = try await TestServer.start(folder: folder)
        let health = try await server.send("GET", "/health", token: nil)
        #expect(health.status == 200)
        for orphan in orphans {
            #expect(!FileManager.default.fileExists(atPath: orphan), "\(orphan) is still there")
        }
        #expect(FileManager.default.fileExists(atPath: inProgress.path), "the upload in progress lost its file")
        await server.stop()
    }
}
