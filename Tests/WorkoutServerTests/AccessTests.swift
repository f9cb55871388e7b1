import Foundation
import Testing
import WorkoutServer

/// Who may read and write what: every endpoint with no token, malformed tokens, unknown tokens, another
/// athlete's token, a coach's token, and injection in every parameter. Nothing stored may change.
@Suite("server access", .serialized)
struct AccessTests {
    /// Alice (team club) with one uploaded workout and one live session at batch 1; Bob (team club);
    /// Carol (no team); a coach token of club.
    struct World {
        var server: TestServer
        var alice: String
        var bob: String
        var carol: String
        var coach: String
        var workout: String
        var session: String
        var fit: Data
    }

    static func world() async throws -> World {
        let server = try await TestServer.start()
        let alice = try server.directory.addAthlete(name: "alice", team: "club").token
        let bob = try server.directory.addAthlete(name: "bob", team: "club").token
        let carol = try server.directory.addAthlete(name: "carol").token
        let coach = try server.directory.issueCoachToken(team: "club")
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let uploaded = try await server.send("POST", "/v1/workouts", token: alice, body: fit)
        #expect(uploaded.status == 201, "\(uploaded.text)")
        let workout = try #require((uploaded.json["workout"] as? [String: Any])?["id"] as? String)
        let session = UUID().uuidString
        let opened = try await server.json("PUT", "/v1/sessions/\(session)", token: alice, ["activityType": "running"])
        #expect(opened.status == 201, "\(opened.text)")
        let batch = try await server.json(
            "POST", "/v1/sessions/\(session)/batches", token: alice,
            heartRateBatch(seq: 1, start: Date(), count: 3, startSession: true))
        #expect(batch.status == 200, "\(batch.text)")
        return World(
            server: server, alice: alice, bob: bob, carol: carol, coach: coach, workout: workout, session: session,
            fit: fit)
    }

    /// Alice's stored data, read with her own token: what must not change.
    static func aliceState(_ world: World) async throws -> String {
        let workouts = try await world.server.send("GET", "/v1/workouts", token: world.alice)
        let session = try await world.server.send("GET", "/v1/sessions/\(world.session)", token: world.alice)
        let samples = try await world.server.send("GET", "/v1/samples?type=heartRate", token: world.alice)
        let workoutIDs = ((workouts.json["workouts"] as? [[String: Any]]) ?? []).compactMap {
            ($0["workout"] as? [String: Any])?["id"] as? String
        }
        return "\(workoutIDs) \(session.json["lastBatch"] ?? "-") \(session.json["samples"] ?? "-") "
            + "\((samples.json["samples"] as? [Any])?.count ?? -1)"
    }

    /// Every endpoint, with a body that would be accepted from the right token.
    static func endpoints(_ world: World) -> [(method: String, path: String, body: Data?)] {
        let setup = try? JSONSerialization.data(withJSONObject: ["activityType": "cycling"])
        let batch = try? JSONSerialization.data(
            withJSONObject: heartRateBatch(seq: 2, start: Date().addingTimeInterval(5), count: 2))
        return [
            ("GET", "/v1/me", nil),
            ("POST", "/v1/workouts", world.fit),
            ("GET", "/v1/workouts", nil),
            ("GET", "/v1/workouts/\(world.workout)", nil),
            ("GET", "/v1/workouts/\(world.workout)/report", nil),
            ("DELETE", "/v1/workouts/\(world.workout)", nil),
            ("GET", "/v1/samples?type=heartRate", nil),
            ("PUT", "/v1/sessions/\(world.session)", setup),
            ("GET", "/v1/sessions/\(world.session)", nil),
            ("POST", "/v1/sessions/\(world.session)/batches", batch),
            ("POST", "/v1/sessions/\(world.session)/finish", nil),
        ]
    }

    @Test func everyEndpointRefusesMissingMalformedAndUnknownTokensAndNothingChanges() async throws {
        let world = try await Self.world()
        defer { world.server.remove() }
        let before = try await Self.aliceState(world)
        let malformed = [
            "Bearer", "Bearer ", "Basic YWxpY2U6c2VjcmV0", "Bearer wk_' OR '1'='1' --",
            "Bearer " + world.alice + "x", "Bearer " + String(world.alice.dropLast()),
            "Bearer wk_" + String(repeating: "%", count: 32), "Bearer " + world.alice.uppercased().replacingOccurrences(of: "WK_", with: "xx_"),
            "Token " + world.alice,
        ]
        let unknown = "wk_" + String(repeating: "A", count: 32)
        for endpoint in Self.endpoints(world) {
            let none = try await world.server.send(endpoint.method, endpoint.path, token: nil, body: endpoint.body)
            #expect(none.status == 401 && none.errorCode == "unauthorized", "\(endpoint.method) \(endpoint.path): \(none.status) \(none.text)")
            for header in malformed {
                let answer = try await world.server.send(
                    endpoint.method, endpoint.path, token: nil, body: endpoint.body, authorization: header)
                #expect(
                    answer.status == 401 && answer.errorCode == "malformed_token",
                    "\(endpoint.method) \(endpoint.path) with '\(header)': \(answer.status) \(answer.text)")
            }
            let stranger = try await world.server.send(endpoint.method, endpoint.path, token: unknown, body: endpoint.body)
            #expect(
                stranger.status == 401 && stranger.errorCode == "unknown_token",
                "\(endpoint.method) \(endpoint.path): \(stranger.status) \(stranger.text)")
        }
        #expect(try await Self.aliceState(world) == before)
        await world.server.stop()
    }

    @Test("a revoked token is refused once the token cache lifetime has passed since its last lookup, at once with 0")
    func aRevokedTokenIsRefusedAfterTheTokenCacheLifetime() async throws {
        for lifetime in [0.0, 0.5, 30] {
            let server = try await TestServer.start { $0.tokenCacheLifetime = lifetime }
            defer { server.remove() }
            let token = try server.directory.addAthlete(name: "dora").token
            // Issued a moment ago and never refused before: known at once (unknown tokens are not kept).
            #expect(try await server.send("GET", "/v1/me", token: "wk_" + String(repeating: "A", count: 32)).status == 401)
            #expect(try await server.send("GET", "/v1/me", token: token).status == 200)
            let revoked = ContinuousClock.now
            try server.directory.revokeTokens(athlete: "dora")
            if lifetime == 0 {
                let answer = try await server.send("GET", "/v1/me", token: token)
                #expect(answer.status == 401 && answer.errorCode == "unknown_token", "\(answer.text)")
            } else if lifetime == 30 {
                // Looked up a moment ago: trusted without asking the directory until the lifetime has passed.
                #expect(try await server.send("GET", "/v1/me", token: token).status == 200)
            } else {
                try await Task.sleep(for: .seconds(lifetime) - (ContinuousClock.now - revoked) + .milliseconds(50))
                for path in ["/v1/me", "/v1/workouts"] {
                    let answer = try await server.send("GET", path, token: token)
                    #expect(answer.status == 401 && answer.errorCode == "unknown_token", "\(path): \(answer.text)")
                }
            }
            await server.stop()
        }
    }

    @Test func anotherAthletesTokenNeitherReadsNorWritesAlicesData() async throws {
        let world = try await Self.world()
        defer { world.server.remove() }
        let before = try await Self.aliceState(world)
        let server = world.server
        for token in [world.bob, world.carol] {
            #expect(try await server.send("GET", "/v1/workouts/\(world.workout)", token: token).status == 404)
            #expect(try await server.send("GET", "/v1/workouts/\(world.workout)/report", token: token).status == 404)
            #expect(try await server.send("DELETE", "/v1/workouts/\(world.workout)", token: token).status == 404)
            let listed = try await server.send("GET", "/v1/workouts", token: token)
            #expect(listed.status == 200 && (listed.json["workouts"] as? [Any])?.isEmpty == true, "\(listed.text)")
            let named = try await server.send("GET", "/v1/workouts?athlete=alice", token: token)
            #expect(named.status == 403 && named.errorCode == "forbidden", "\(named.text)")
            let samples = try await server.send("GET", "/v1/samples?workout=\(world.workout)", token: token)
            #expect(samples.status == 200 && (samples.json["samples"] as? [Any])?.isEmpty == true, "\(samples.text)")
            for (method, path, body) in Self.endpoints(world) where path.hasPrefix("/v1/sessions/") {
                let answer = try await server.send(method, path, token: token, body: body, contentType: "application/json")
                #expect(
                    answer.status == 403 && answer.errorCode == "session_of_another_athlete",
                    "\(method) \(path): \(answer.status) \(answer.text)")
            }
        }
        #expect(try await Self.aliceState(world) == before)
        await server.stop()
    }

    @Test func aCoachTokenReadsItsTeamOnlyAndWritesNothing() async throws {
        let world = try await Self.world()
        defer { world.server.remove() }
        let server = world.server
        let carolsUpload = try await server.send("POST", "/v1/workouts", token: world.carol, body: world.fit)
        #expect(carolsUpload.status == 201)
        let before = try await Self.aliceState(world)
        let listed = try await server.send("GET", "/v1/workouts", token: world.coach)
        let athletes = ((listed.json["workouts"] as? [[String: Any]]) ?? []).compactMap { $0["athlete"] as? String }
        #expect(athletes == ["alice"], "the coach of club sees alice's workout, not carol's: \(listed.text)")
        #expect(try await server.send("GET", "/v1/workouts/\(world.workout)", token: world.coach).status == 200)
        let outsider = try await server.send("GET", "/v1/workouts?athlete=carol", token: world.coach)
        #expect(outsider.status == 403)
        for (method, path, body) in Self.endpoints(world) where method != "GET" {
            let answer = try await server.send(method, path, token: world.coach, body: body)
            #expect(answer.status == 403, "\(method) \(path): \(answer.status) \(answer.text)")
        }
        #expect(try await Self.aliceState(world) == before)
        await server.stop()
    }

    @Test func injectionInEveryParameterIsRefusedWithATypedErrorAndNothingChanges() async throws {
        let world = try await Self.world()
        defer { world.server.remove() }
        let server = world.server
        let before = try await Self.aliceState(world)
        let payloads = [
            "' OR '1'='1", "1; DROP TABLE workout; --", "\"}],\"workouts\":[{\"", "cycling' --", "../../etc/passwd",
            "heartRate.average>150 OR 1=1", "\u{0}", "1e309", "-1",
        ]
        let parameters = [
            ("/v1/workouts", ["type", "activity", "condition", "from", "to", "minDuration", "maxDuration", "order", "limit"]),
            ("/v1/samples", ["type", "from", "to", "workout", "order", "limit"]),
        ]
        let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        for (path, names) in parameters {
            for name in names + ["athlete", "sql"] {
                for payload in payloads {
                    let answer = try await server.send("GET", "\(path)?\(encode(name))=\(encode(payload))", token: world.alice)
                    let expected = name == "athlete" ? 403 : 400
                    #expect(
                        answer.status == expected && answer.errorCode != nil,
                        "\(path) \(name)=\(payload): \(answer.status) \(answer.text)")
                }
            }
        }
        for payload in payloads {
            let id = encode(payload)
            for (method, path) in [
                ("GET", "/v1/workouts/\(id)"), ("GET", "/v1/workouts/\(id)/report"), ("DELETE", "/v1/workouts/\(id)"), ("GET", "/v1/sessions/\(id)"),
                ("POST", "/v1/sessions/\(id)/finish"),
            ] {
                let answer = try await server.send(method, path, token: world.alice)
                #expect(answer.status == 400 && answer.errorCode == "invalid_id", "\(method) \(path): \(answer.text)")
            }
            let setup = try await server.json("PUT", "/v1/sessions/\(UUID())", token: world.alice, ["activityType": payload])
            #expect(setup.status == 422 && setup.errorCode == "unknown_activity_type", "\(setup.text)")
        }
        let typed = try await server.send(
            "POST", "/v1/sessions/\(world.session)/batches", token: world.alice,
            body: Data(#"{"seq": "2 OR 1=1", "items": []}"#.utf8), contentType: "application/json")
        #expect(typed.status == 400 && typed.errorCode == "invalid_json", "\(typed.text)")
        #expect(try await Self.aliceState(world) == before)
        #expect(try await server.send("GET", "/health", token: nil).status == 200)
        await server.stop()
    }

    @Test func tokensAreRandomLongAndStoredOnlyAsHashes() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-dir-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let directory = try ServerDirectory(folder: folder)
        let first = try directory.addAthlete(name: "dana").token
        let second = try directory.issueToken(athlete: "dana")
        #expect(first != second)
        // 32 base64url characters after the prefix: 192 random bits (>= 128).
        #expect(first.hasPrefix("wk_") && first.count == 35)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/directory.sqlite"))
        #expect(bytes.range(of: Data(first.utf8)) == nil && bytes.range(of: Data(second.utf8)) == nil)
        #expect(throws: ServerSetupError.athleteExists("dana")) { try directory.addAthlete(name: "dana") }
        #expect(throws: ServerSetupError.invalidName("x' OR 1=1")) { try directory.addAthlete(name: "x' OR 1=1") }
    }
}
