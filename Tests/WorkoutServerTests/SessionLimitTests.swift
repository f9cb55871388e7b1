import Foundation
import Testing

@testable import WorkoutServer

/// The limit of open live sessions per athlete holds: beyond it an open is a 429 that holds up no other athlete and
/// writes nothing (no claim of its id in the directory), a finished session frees its place, and a session released
/// for idleness takes a place again when it comes back (429 beyond the limit).
@Suite("session limits", .serialized)
struct SessionLimitTests {
    @Test func anAthleteBeyondItsLimitOfOpenSessionsGets429AndOthersAreNotHeldUp() async throws {
        let limited = try await LimitedSessionsServer.start(limit: 2)
        let (server, token, other) = (limited.server, limited.token, limited.other)
        defer { server.remove() }
        let sessions = (0..<3).map { _ in UUID().uuidString }
        for session in sessions.prefix(2) {
            #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"]).status == 201)
        }
        let third = try await server.json("PUT", "/v1/sessions/\(sessions[2])", token: token, ["activityType": "running"])
        #expect(third.status == 429 && third.errorCode == "too_many_sessions", "\(third.text)")
        #expect((third.json["error"] as? [String: Any]).flatMap { $0["details"] as? [String: String] }?["limit"] == "2")
        // Reopening an open session is not a new one; another athlete has its own limit.
        #expect(try await server.json("PUT", "/v1/sessions/\(sessions[0])", token: token, ["activityType": "running"]).status == 200)
        #expect(try await server.json("PUT", "/v1/sessions/\(UUID())", token: other, ["activityType": "running"]).status == 201)
        // A finished session frees its place.
        let start = Date().addingTimeInterval(-30)
        var batch = heartRateBatch(seq: 1, start: start, count: 3, startSession: true)
        var items = try #require(batch["items"] as? [[String: Any]])
        items.append(["kind": "end", "at": iso(start.addingTimeInterval(10))])
        batch["items"] = items
        #expect(try await server.json("POST", "/v1/sessions/\(sessions[0])/batches", token: token, batch).status == 200)
        #expect(try await server.send("POST", "/v1/sessions/\(sessions[0])/finish", token: token).status == 200)
        #expect(try await server.json("PUT", "/v1/sessions/\(sessions[2])", token: token, ["activityType": "running"]).status == 201)
        let metrics = try await server.send("GET", "/metrics", token: nil)
        #expect(metrics.text.contains("workout_live_sessions_over_limit_total 1"), "\(metrics.text)")
        await server.stop()
    }

    @Test(arguments: Backend.available)
    func aRefusedOpenWritesNothingToTheDirectory(_ backend: Backend) async throws {
        let limited = try await LimitedSessionsServer.start(backend: backend, limit: 2)
        let (server, token, other) = (limited.server, limited.token, limited.other)
        defer { server.remove() }
        for _ in 0..<2 {
            #expect(try await server.json("PUT", "/v1/sessions/\(UUID())", token: token, ["activityType": "running"]).status == 201)
        }
        let refusedIDs = (0..<20).map { _ in UUID() }
        for id in refusedIDs {
            let refused = try await server.json("PUT", "/v1/sessions/\(id)", token: token, ["activityType": "running"])
            #expect(refused.status == 429 && refused.errorCode == "too_many_sessions", "\(refused.text)")
        }
        for id in refusedIDs {
            #expect(try server.directory.sessionOwner(id) == nil, "a refused open claimed \(id)")
        }
        // So a refused id stays free for everyone, its athlete's other token holders included.
        let taken = try await server.json("PUT", "/v1/sessions/\(refusedIDs[0])", token: other, ["activityType": "running"])
        #expect(taken.status == 201, "\(taken.text)")
        await server.stop()
    }

    @Test(arguments: Backend.available)
    func aSessionReleasedForIdlenessTakesAPlaceAgainWhenItComesBack(_ backend: Backend) async throws {
        // The idle time-out long enough that the other session is not released too while the test uses it.
        let limited = try await LimitedSessionsServer.start(backend: backend, limit: 1, idleTimeout: 3)
        let (server, token) = (limited.server, limited.token)
        defer { server.remove() }
        let (idle, busy) = (UUID().uuidString, UUID().uuidString)
        let start = Date().addingTimeInterval(-60)
        #expect(try await server.json("PUT", "/v1/sessions/\(idle)", token: token, ["activityType": "cycling"]).status == 201)
        let first = heartRateBatch(seq: 1, start: start, count: 3, startSession: true)
        #expect(try await server.json("POST", "/v1/sessions/\(idle)/batches", token: token, first).status == 200)
        _ = await waitUntil(30, every: .milliseconds(100)) { await server.server.sessions.count == 0 }
        #expect(await server.server.sessions.count == 0, "the idle session was not released")
        // Its place is free: another session opens and fills the limit.
        #expect(try await server.json("PUT", "/v1/sessions/\(busy)", token: token, ["activityType": "running"]).status == 201)
        // The released one coming back would make two: its state, batch and reopening are 429, nothing is applied.
        let state = try await server.send("GET", "/v1/sessions/\(idle)", token: token)
        #expect(state.status == 429 && state.errorCode == "too_many_sessions", "\(state.text)")
        let second = heartRateBatch(seq: 2, start: start.addingTimeInterval(3), count: 3, first: 130)
        let batch = try await server.json("POST", "/v1/sessions/\(idle)/batches", token: token, second)
        #expect(batch.status == 429 && batch.errorCode == "too_many_sessions", "\(batch.text)")
        let reopen = try await server.json("PUT", "/v1/sessions/\(idle)", token: token, ["activityType": "cycling"])
        #expect(reopen.status == 429, "\(reopen.text)")
        #expect(await server.server.sessions.count == 1)
        // Once the other one is finished, the released one resumes where it was.
        let end = ["seq": 1, "items": [["kind": "start", "at": iso(start)], ["kind": "end", "at": iso(start.addingTimeInterval(5))]]] as [String: Any]
        #expect(try await server.json("POST", "/v1/sessions/\(busy)/batches", token: token, end).status == 200)
        #expect(try await server.send("POST", "/v1/sessions/\(busy)/finish", token: token).status == 200)
        let resumed = try await server.json("POST", "/v1/sessions/\(idle)/batches", token: token, second)
        #expect(resumed.status == 200 && resumed.json["ack"] as? Int == 2, "\(resumed.text)")
        let after = try await server.send("GET", "/v1/sessions/\(idle)", token: token)
        #expect(after.json["samples"] as? Int == 6, "\(after.text)")
        await server.stop()
    }
}
