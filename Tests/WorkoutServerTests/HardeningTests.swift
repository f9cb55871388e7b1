import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

@testable import WorkoutServer

/// Request bodies with unknown fields, the limit on open live sessions, idle sessions and the graceful stop.
@Suite("server hardening", .serialized)
struct HardeningTests {
    static func state(_ server: TestServer, _ session: String, token: String) async throws -> (Int?, Int?) {
        let state = try await server.send("GET", "/v1/sessions/\(session)", token: token)
        return (state.json["lastBatch"] as? Int, state.json["samples"] as? Int)
    }

    @Test func anUnknownFieldInARequestBodyIsRefusedByNameAndNothingIsKept() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "uma").token
        let session = UUID().uuidString
        let setup = try await server.json(
            "PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running", "activitytype": "cycling"])
        #expect(setup.status == 400 && setup.errorCode == "unknown_field", "\(setup.text)")
        #expect(setup.errorMessage?.contains("'activitytype'") == true, "\(setup.text)")
        #expect(try await server.send("GET", "/v1/sessions/\(session)", token: token).status == 404, "no session was opened")

        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"]).status == 201)
        var batch = heartRateBatch(seq: 1, start: Date(), count: 3, startSession: true)
        var items = try #require(batch["items"] as? [[String: Any]])
        var samples = try #require(items[1]["samples"] as? [[String: Any]])
        samples[2]["uint"] = "count/min"  // a typo of "unit": must not be ignored
        items[1]["samples"] = samples
        batch["items"] = items
        let refused = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, batch)
        #expect(refused.status == 400 && refused.errorCode == "unknown_field", "\(refused.text)")
        #expect(refused.errorMessage?.contains("'items[1].samples[2].uint'") == true, "\(refused.text)")
        let source = ["seq": 1, "items": [["kind": "start", "at": iso(Date()), "source": ["name": "x"]]]] as [String: Any]
        let misplaced = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, source)
        #expect(misplaced.errorCode == "unknown_field" && misplaced.errorMessage?.contains("'items[0].source'") == true)
        let topLevel = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, ["seq": 1, "items": [], "ack": 1])
        #expect(topLevel.status == 400 && topLevel.errorMessage?.contains("'ack'") == true, "\(topLevel.text)")
        #expect(try await Self.state(server, session, token: token) == (0, 0), "nothing of the refused batches is kept")
        await server.stop()
    }

    @Test func anAthleteBeyondItsLimitOfOpenSessionsGets429AndOthersAreNotHeldUp() async throws {
        let server = try await TestServer.start { $0.maxOpenSessionsPerAthlete = 2 }
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "vic").token
        let other = try server.directory.addAthlete(name: "wes").token
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
    func anIdleSessionIsReleasedWithItsJournalAndResumesOnTheNextBatch(_ backend: Backend) async throws {
        let server = try await TestServer.start(backend: backend) {
            $0.sessionIdleTimeout = 1
            $0.maxOpenSessionsPerAthlete = 1
        }
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "xia").token
        let session = UUID().uuidString
        let start = Date().addingTimeInterval(-60)
        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "cycling"]).status == 201)
        let first = heartRateBatch(seq: 1, start: start, count: 5, startSession: true)
        #expect(try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, first).json["ack"] as? Int == 1)
        // Idle for longer than the timeout: released from memory (it no longer counts against the limit).
        let released = await waitUntil(10, every: .milliseconds(250)) { await server.server.sessions.count == 0 }
        #expect(released, "the idle session was not released")
        let metrics = try await server.send("GET", "/metrics", token: nil)
        #expect(metrics.text.contains("workout_live_sessions_idle_released_total 1"), "\(metrics.text)")
        // The client comes back: the next batch resumes from the journal, nothing lost or doubled.
        let second = heartRateBatch(seq: 2, start: start.addingTimeInterval(5), count: 5, first: 130)
        let answer = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, second)
        #expect(answer.status == 200 && answer.json["ack"] as? Int == 2, "\(answer.text)")
        #expect(try await Self.state(server, session, token: token) == (2, 10))
        await server.stop()
    }

    @Test func aGracefulStopFinishesTheUploadInFlightBeforeClosingTheStores() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-server-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await TestServer.start(folder: folder)
        let token = try server.directory.addAthlete(name: "yan").token
        let fit = try SharedData.bytes("mk_big_activity")
        let upload = Task { try await server.send("POST", "/v1/workouts", token: token, body: fit) }
        // Stopped while the import is running (the request accepted, its commit not yet made).
        let inFlight = await waitUntil(4, every: .milliseconds(2)) { server.server.uploadsInFlight.withLock { !$0.isEmpty } }
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

    @Test(
        "requests waiting on a locked database hold none of the threads that answer requests: /health answers meanwhile",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func requestsWaitingOnTheDatabaseLeaveTheServerAnswering() async throws {
        let server = try await TestServer.start(backend: .postgres) { $0.tokenCacheLifetime = 600 }
        defer { server.remove() }
        let url = try #require(server.postgresURL)
        let token = try server.directory.addAthlete(name: "ida").token
        // Known to the server (its token looked up, its store opened) before the table is locked.
        #expect(try await server.send("GET", "/v1/workouts", token: token).status == 200)
        // Another client holds the workouts' table for four seconds: every read of it waits that long.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc",
            "BEGIN; LOCK TABLE workout IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;",
        ]
        try holder.run()
        defer { holder.waitUntilExit() }
        var locked = false
        for _ in 0..<150 where !locked {
            locked = try TestPostgres.psql(
                url,
                "SELECT count(*) FROM pg_locks WHERE relation = 'workout'::regclass AND mode = 'AccessExclusiveLock' AND granted"
            ) == "1"
            if !locked { try await Task.sleep(for: .milliseconds(20)) }
        }
        try #require(locked, "the table was not locked: the reads below would not wait")
        let started = ContinuousClock.now
        // More waiting reads than the machine has cores (the width of Swift's cooperative pool).
        let reads = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<reads {
                group.addTask { try await server.send("GET", "/v1/workouts", token: token).status }
            }
            try await Task.sleep(for: .milliseconds(300))
            // On a client of its own: the shared one keeps at most a few connections to a host, all taken by the reads.
            let client = URLSession(configuration: .ephemeral)
            let health = try #require(URL(string: server.base + "/health"))
            let (_, response) = try await client.data(from: health)
            let answeredAfter = ContinuousClock.now - started
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(answeredAfter < .seconds(3), "/health took \(answeredAfter) while reads waited on the lock")
            for try await status in group { #expect(status == 200) }
            // The reads did wait for the lock (else /health answering proves nothing).
            #expect(ContinuousClock.now - started > .seconds(2), "the reads did not wait on the locked table")
        }
        await server.stop()
    }
}
