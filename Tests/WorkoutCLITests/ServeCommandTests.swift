import Foundation
import Testing
import WorkoutTestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `workout serve` as a process: start, `workout push`, SIGTERM, and `kill -9` in the middle of a live session.
@Suite("workout serve and push", .serialized)
struct ServeCommandTests {
    /// The built `workout` executable beside the test bundle.
    static func executable() throws -> URL {
        let url = BuiltProducts.executable("workout")
        guard FileManager.default.fileExists(atPath: url.path) else { throw ServeFailure("no workout executable") }
        return url
    }

    struct ServeFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// A running `workout serve` on a free port.
    final class ServerProcess {
        let process = Process()
        let output = Pipe()
        var base = ""

        /// `port` 0 takes a free port; a given port starts a server again where clients expect it.
        init(data: String, port: Int = 0, arguments: [String] = []) throws {
            process.executableURL = try ServeCommandTests.executable()
            process.arguments = ["serve", "--db", data, "--port", "\(port)", "--log-level", "critical"] + arguments
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // The first line is `listening on http://127.0.0.1:PORT`.
            var line = Data()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                line.append(byte)
            }
            let text = String(decoding: line, as: UTF8.self)
            guard text.hasPrefix("listening on ") else { throw ServeFailure("workout serve printed '\(text)'") }
            base = String(text.dropFirst("listening on ".count))
        }

        func signal(_ number: Int32) -> Int32 {
            kill(process.processIdentifier, number)
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static func send(_ method: String, _ url: String, token: String, json: Any? = nil) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return (
            (response as? HTTPURLResponse)?.statusCode ?? 0,
            ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
        )
    }

    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID())").path
    }

    static var sharedFIT: String { SharedData.fitPath("fp_sample-activity-indoor-trainer") }

    @Test func pushUploadsStoredWorkoutsOnceAndSIGTERMStopsTheServerCleanly() async throws {
        let data = Self.temporary("serve-data")
        let store = Self.temporary("push-store") + ".sqlite"
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: store)
        }
        let added = try Self.run(["athletes", "add", "kim", "--db", data])
        #expect(added.status == 0)
        let token = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.hasPrefix("wk_") && token.count == 35)
        let again = try Self.run(["athletes", "add", "kim", "--db", data])
        #expect(again.status != 0 && again.output.contains("already exists"))
        #expect(try Self.run(["import", Self.sharedFIT, "--db", store]).status == 0)

        let server = try ServerProcess(data: data)
        let first = try Self.run(["push", "--all", "--to", server.base, "--token", token, "--db", store])
        #expect(first.status == 0 && first.output.contains("pushed"), "\(first.output)")
        let second = try Self.run(["push", "--all", "--to", server.base, "--token", token, "--db", store])
        #expect(second.status == 0 && second.output.contains("already on the server"), "\(second.output)")
        let refused = try Self.run(["push", "--all", "--to", server.base, "--token", "wk_" + String(repeating: "B", count: 32), "--db", store])
        #expect(refused.status != 0 && refused.output.contains("refused the token"), "\(refused.output)")
        let (status, listing) = try await Self.send("GET", server.base + "/v1/workouts", token: token)
        #expect(status == 200 && (listing["workouts"] as? [Any])?.count == 1)
        #expect(server.signal(SIGTERM) == 0, "a graceful stop exits 0")
        let unreachable = try Self.run(["push", "--all", "--to", server.base, "--token", token, "--db", store])
        #expect(unreachable.status != 0 && unreachable.output.contains("cannot reach"), "\(unreachable.output)")
    }

    @Test func afterKill9TheSessionResumesWithEveryAcknowledgedSampleOnce() async throws {
        let data = Self.temporary("serve-data")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let token = try Self.run(["athletes", "add", "lee", "--db", data]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var server = try ServerProcess(data: data)
        let session = UUID().uuidString
        let start = Date().addingTimeInterval(-120)
        func batch(_ seq: Int, extra: [[String: Any]] = []) -> [String: Any] {
            let formatter = ISO8601DateFormatter()
            var items: [[String: Any]] = seq == 1 ? [["kind": "start", "at": formatter.string(from: start)]] : []
            items.append([
                "kind": "samples",
                "samples": (0..<5).map { index in
                    [
                        "type": "heartRate", "value": Double(100 + seq * 5 + index),
                        "start": formatter.string(from: start.addingTimeInterval(Double((seq - 1) * 5 + index))),
                    ] as [String: Any]
                },
            ])
            return ["seq": seq, "items": items + extra]
        }
        #expect(try await Self.send("PUT", server.base + "/v1/sessions/\(session)", token: token, json: ["activityType": "running"]).0 == 201)
        var acknowledged = 0
        for seq in 1...6 {
            let (status, body) = try await Self.send("POST", server.base + "/v1/sessions/\(session)/batches", token: token, json: batch(seq))
            if status == 200, body["ack"] as? Int == seq { acknowledged = seq }
        }
        #expect(acknowledged == 6)
        #expect(server.signal(SIGKILL) == SIGKILL || server.process.terminationReason == .uncaughtSignal)

        server = try ServerProcess(data: data)
        let (_, state) = try await Self.send("GET", server.base + "/v1/sessions/\(session)", token: token)
        #expect(state["lastBatch"] as? Int == 6 && state["samples"] as? Int == 30, "\(state)")
        let end = ISO8601DateFormatter().string(from: start.addingTimeInterval(40))
        let (status, _) = try await Self.send(
            "POST", server.base + "/v1/sessions/\(session)/batches", token: token,
            json: batch(7, extra: [["kind": "stop", "at": end], ["kind": "end", "at": end]]))
        #expect(status == 200)
        #expect(try await Self.send("POST", server.base + "/v1/sessions/\(session)/finish", token: token).0 == 200)
        let (_, samples) = try await Self.send("GET", server.base + "/v1/samples?workout=\(session)", token: token)
        let values = ((samples["samples"] as? [[String: Any]]) ?? []).compactMap {
            (($0["sample"] as? [String: Any])?["quantity"] as? [String: Any])?["value"] as? Double
        }
        var expected: [Double] = []
        for seq in 1...7 {
            for index in 0..<5 { expected.append(Double(100 + seq * 5 + index)) }
        }
        #expect(values == expected)
        #expect(server.signal(SIGTERM) == 0)
    }

    /// The test PostgreSQL of scripts/test.sh (skipped without one, failing under CI=true).
    @Test(.enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func athletesCommandsKeepTokensInThePostgresDatabaseTheServerReads() async throws {
        // A database of its own (athlete names are unique per database).
        let url = try TestPostgres.freshDatabase(prefix: "workout_cli")
        let data = Self.temporary("serve-pg-data")
        defer { try? FileManager.default.removeItem(atPath: data) }

        let added = try Self.run(["athletes", "add", "ann", "--team", "club", "--db", url])
        #expect(added.status == 0, "\(added.output)")
        let token = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let again = try Self.run(["athletes", "add", "ann", "--db", url])
        #expect(again.status != 0 && again.output.contains("already exists"), "\(again.output)")
        let second = try Self.run(["athletes", "token", "ann", "--db", url]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let coach = try Self.run(["athletes", "coach-token", "club", "--db", url]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let listed = try Self.run(["athletes", "list", "--db", url])
        #expect(listed.status == 0 && listed.output == "ann\tclub\n", "\(listed.output)")
        #expect(!FileManager.default.fileExists(atPath: data + "/directory.sqlite"))

        let server = try ServerProcess(data: url, arguments: ["--data", data])
        for (credential, kind) in [(token, "athlete"), (second, "athlete"), (coach, "coach")] {
            let (status, me) = try await Self.send("GET", server.base + "/v1/me", token: credential)
            #expect(status == 200 && me["kind"] as? String == kind, "\(me)")
        }
        #expect(try Self.run(["athletes", "revoke", "ann", "--db", url]).status == 0)
        // The server's token cache (--token-cache 1) forgets the token within a second.
        _ = await waitUntil(60) { (try? await Self.send("GET", server.base + "/v1/me", token: token).0) == 401 }
        #expect(try await Self.send("GET", server.base + "/v1/me", token: token).0 == 401, "revoked while the server runs")
        #expect(!FileManager.default.fileExists(atPath: data + "/directory.sqlite"), "the server keeps no directory of its own")
        #expect(server.signal(SIGTERM) == 0)
    }
}
