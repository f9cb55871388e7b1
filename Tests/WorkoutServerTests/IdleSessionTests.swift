import Foundation
import Testing

@testable import WorkoutServer

/// A live session idle past the time-out is released from memory with its journal kept, and resumes on its next batch.
@Suite("idle live sessions", .serialized)
struct IdleSessionTests {
    @Test(arguments: Backend.available)
    func anIdleSessionIsReleasedWithItsJournalAndResumesOnTheNextBatch(_ backend: Backend) async throws {
        let limited = try await LimitedSessionsServer.start(backend: backend, limit: 1, idleTimeout: 3)
        let (server, token) = (limited.server, limited.token)
        defer { server.remove() }
        let session = UUID().uuidString
        let start = Date().addingTimeInterval(-60)
        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "cycling"]).status == 201)
        let first = heartRateBatch(seq: 1, start: start, count: 5, startSession: true)
        #expect(try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, first).json["ack"] as? Int == 1)
        // Idle for longer than the timeout: released from memory (it no longer counts against the limit).
        // (3 s: on two busy cores a 1 s time-out could release the session between its opening and its first batch.)
        let released = await waitUntil(20, every: .milliseconds(250)) { await server.server.sessions.count == 0 }
        #expect(released, "the idle session was not released")
        let metrics = try await server.send("GET", "/metrics", token: nil)
        #expect(metrics.text.contains("workout_live_sessions_idle_released_total 1"), "\(metrics.text)")
        // The client comes back: the next batch resumes from the journal, nothing lost or doubled.
        let second = heartRateBatch(seq: 2, start: start.addingTimeInterval(5), count: 5, first: 130)
        let answer = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, second)
        #expect(answer.status == 200 && answer.json["ack"] as? Int == 2, "\(answer.text)")
        #expect(try await server.sessionState(session, token: token) == (2, 10))
        await server.stop()
    }
}
