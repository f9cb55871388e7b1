import Foundation
import Testing

@testable import WorkoutServer

/// A graceful stop (SIGTERM's) answers the requests in flight, then closes the live sessions, last the connections.
@Suite("graceful stop", .serialized)
struct GracefulStopTests {
    @Test func aGracefulStopFinishesTheUploadInFlightBeforeClosingTheStores() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-server-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await TestServer.start(folder: folder)
        let token = try server.directory.addAthlete(name: "yan").token
        let fit = try SharedData.bytes("mk_big_activity")
        // Waited for as long as the import takes: in the first pass on two busy cores it took about a minute (debug
        // build), and URLSession's default of 60 s answered "timed out" in its place.
        let upload = Task { try await server.send("POST", "/v1/workouts", token: token, body: fit, timeout: 600) }
        // Stopped while the import is running (the request accepted, its commit not yet made).
        // Watched from a thread of its own: on the cooperative pool, busy with the other suites' servers, a poll
        // every 2 ms could sleep through the whole import. As long as the request may take: on a loaded machine the
        // 13 MB body once took over 120 s to be read and its import to begin (CI of ddfcc69).
        let inFlight = await onOwnThread {
            let deadline = Date().addingTimeInterval(600)
            while Date() < deadline {
                if server.server.uploadsInFlight.withLock({ !$0.isEmpty }) { return true }
                usleep(500)
            }
            return false
        }
        #expect(inFlight, "the upload was never seen in flight")
        await server.server.shutdown()
        let answer = try await upload.value
        #expect(answer.status == 201, "the upload in flight was answered after its commit: \(answer.text)")
        try await server.task.value  // the server stopped by itself, without an error
        // In order: the requests in flight answered, then the live sessions closed, last the connections.
        let steps = server.server.shutdownSteps.withLock { $0 }
        #expect(steps == ["sessions closed with 0 uploads in flight", "connections closed"])
        let refused = try? await server.send("GET", "/health", token: nil)
        #expect(refused == nil, "the stopped server accepts nothing")
        let again = try await TestServer.start(folder: folder)
        let listed = try await again.send("GET", "/v1/workouts", token: token)
        #expect((listed.json["workouts"] as? [Any])?.count == 1, "\(listed.text)")
        await again.stop()
    }
}
