import Foundation
import Synchronization
import Testing
import WorkoutModel

#if canImport(Glibc)
    import Glibc
#endif

@testable import WorkoutServer

/// docs/openapi.yaml against the running server: every status the server answers on a route is listed there.
@Suite("OpenAPI document", .serialized)
struct OpenAPIDocumentTests {
    /// The document's responses: "METHOD /path" → the statuses it lists.
    ///
    /// Reads the layout docs/openapi.yaml keeps (paths at two spaces, methods at four, statuses as quoted
    /// keys at eight); a document in another layout fails here rather than passing unread.
    static func documentedResponses() throws -> [String: Set<Int>] {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: repository.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var responses: [String: Set<Int>] = [:]
        var inPaths = false
        var path: String?
        var operation: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
                operation = nil
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), let path {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast()
                operation = ["get", "put", "post", "delete"].contains(method) ? "\(method.uppercased()) \(path)" : nil
            } else if line.hasPrefix("        '"), !line.hasPrefix("         "), let operation {
                let status = line.dropFirst(9).prefix(3)
                if let code = Int(status) { responses[operation, default: []].insert(code) }
            }
        }
        return responses
    }

    @Test func theDocumentListsEveryRouteWithItsSuccessAndErrorStatuses() throws {
        let responses = try Self.documentedResponses()
        let routes = [
            "GET /health", "GET /ready", "GET /metrics", "GET /v1/me", "POST /v1/workouts", "GET /v1/workouts",
            "GET /v1/workouts/{id}", "DELETE /v1/workouts/{id}", "GET /v1/workouts/{id}/report", "GET /v1/samples",
            "PUT /v1/sessions/{id}", "GET /v1/sessions/{id}", "POST /v1/sessions/{id}/batches",
            "POST /v1/sessions/{id}/finish",
        ]
        #expect(Set(responses.keys) == Set(routes), "\(responses.keys.sorted())")
        for route in routes where route.contains("/v1/") {
            #expect(responses[route]?.contains(401) == true, "\(route) lists 401")
        }
    }

    static func documentText() throws -> String {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try String(contentsOf: repository.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
    }

    @Test("the document states the limits the server enforces, with the server's own figures")
    func theDocumentStatesTheLimits() throws {
        let text = try Self.documentText()
        let stated = [
            // Dates: the form, the fraction's digits, the years.
            "years \(FastISODate.minimumYear)–\(FastISODate.maximumYear)",
            "at most \(FastISODate.maximumFractionDigits) fraction digits",
            "maxLength: \(FastISODate.maximumLength)",
            // Queries.
            "maxItems: \(Parsing.maximumConditions)", "at most \(Parsing.maximumConditions) `condition`s",
            "at most \(QueryParameters.maximumCount) query parameters", "\(QueryParameters.maximumTargetLength) bytes",
            // Live sessions' times.
            "maximum: \(Int(TimeBounds.longest))", TimeBounds.longestText, TimeBounds.aheadOfClockText,
            // JSON.
            "nesting at most \(StrictJSON.maximumDepth) deep", "duplicate_field", "trailing comma",
            // Statuses and the request id.
            "405 `method_not_allowed`", "`Allow` header", "415 `unsupported_media_type`", "422 `date_in_future`",
            "429 `too_many_sessions`", "401 whatever else", "X-Request-Id", "requestId", "--body-limit",
            // Schemathesis's "valid request rejected": what the server refuses is not valid in the document.
            "exclusiveMinimum: 0", "minLength: 1", "application/vnd.ant.fit",
            "maximum: \(Int(SessionSetupBody.longestLap))", "maximum: 9007199254740991",
        ]
        for phrase in stated { #expect(text.contains(phrase), "docs/openapi.yaml does not state '\(phrase)'") }
        // Types are enumerations of the server's own (an empty or unknown `type=` is not a valid request).
        for (name, values) in [
            ("ActivityType", WorkoutActivityType.allCases.map(\.rawValue)), ("QuantityType", QuantityType.allCases.map(\.rawValue)),
        ] {
            let line = "    \(name):\n      type: string\n      enum: [" + values.joined(separator: ", ") + "]"
            #expect(text.contains(line), "\(name) is not the enumeration \(values)")
        }
    }

    @Test("the document's date pattern takes what the server takes and refuses what it refuses")
    func theDatePatternMatchesTheParser() throws {
        let text = try Self.documentText()
        let line = try #require(text.split(separator: "\n").first { $0.contains("pattern: '^(19") })
        let pattern = String(line.drop { $0 != "'" }.dropFirst().dropLast()).replacingOccurrences(of: "\\\\", with: "\\")
        let regex = try NSRegularExpression(pattern: pattern)
        func matches(_ date: String) -> Bool { regex.firstMatch(in: date, range: NSRange(date.startIndex..., in: date)) != nil }
        for date in [
            "2026-05-01T07:30:00Z", "1900-01-01T00:00:00.123456789+05:30", "2200-12-31T23:59:59z", "2024-04-30T00:00:00-01:00",
        ] {
            #expect(matches(date) && Wire.parseDate(date) != nil, "\(date)")
        }
        for date in [
            "99999999-01-01T00:00:00Z", "1899-12-31T23:59:59Z", "2026-02-30T00:00:00Z", "2026-05-01T07:30:00.1234567890Z",
            "2026-05-01T24:00:00Z", "2026-05-01T07:30:00",
        ] {
            #expect(!matches(date) && Wire.parseDate(date) == nil, "\(date)")
        }
    }

    /// Every route with what makes it answer each kind of error, recording (route, status).
    @Test func everyStatusTheServerAnswersIsListedForItsRoute() async throws {
        let documented = try Self.documentedResponses()
        let server = try await TestServer.start(bodyLimit: 100_000) { $0.maxOpenSessionsPerAthlete = 2 }
        defer { server.remove() }
        let athlete = try server.directory.addAthlete(name: "ola", team: "club").token
        _ = try server.directory.addAthlete(name: "pia").token
        let coach = try server.directory.issueCoachToken(team: "club")
        var seen: [String: Set<Int>] = [:]
        func call(_ route: String, _ path: String, token: String?, body: Data? = nil) async throws -> Answer {
            let method = String(route.prefix { $0 != " " })
            // JSON bodies as JSON, uploads as FIT files (octet-stream).
            let type = route == "POST /v1/workouts" ? "application/octet-stream" : "application/json"
            let answer = try await server.send(method, path, token: token, body: body, contentType: type)
            seen[route, default: []].insert(answer.status)
            return answer
        }
        func json(_ object: Any) throws -> Data { try JSONSerialization.data(withJSONObject: object) }
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let tooLarge = Data(count: 200_000)
        let unknownID = UUID().uuidString

        for route in ["GET /health", "GET /ready", "GET /metrics"] {
            _ = try await call(route, String(route.dropFirst(4)), token: nil)
        }
        _ = try await call("GET /v1/me", "/v1/me", token: athlete)
        _ = try await call("GET /v1/me", "/v1/me?x=1", token: athlete)
        _ = try await call("GET /v1/me", "/v1/me", token: nil)

        let upload = "POST /v1/workouts"
        let created = try await call(upload, "/v1/workouts", token: athlete, body: fit)
        let workout = try #require((created.json["workout"] as? [String: Any])?["id"] as? String)
        _ = try await call(upload, "/v1/workouts", token: athlete, body: fit)  // duplicate: 200
        _ = try await call(upload, "/v1/workouts", token: athlete, body: Data())
        _ = try await call(upload, "/v1/workouts", token: coach, body: fit)
        _ = try await call(upload, "/v1/workouts", token: nil, body: fit)
        _ = try await call(upload, "/v1/workouts", token: athlete, body: tooLarge)
        _ = try await call(upload, "/v1/workouts", token: athlete, body: fit.prefix(fit.count / 2))

        for (route, path) in [
            ("GET /v1/workouts", "/v1/workouts"), ("GET /v1/samples", "/v1/samples"),
            ("GET /v1/workouts/{id}", "/v1/workouts/\(workout)"),
            ("GET /v1/workouts/{id}/report", "/v1/workouts/\(workout)/report"),
        ] {
            _ = try await call(route, path, token: athlete)
            _ = try await call(route, path + "?bogus=1", token: athlete)
            _ = try await call(route, path + "?athlete=pia", token: athlete)
            _ = try await call(route, path + "?athlete=pia", token: coach)
            _ = try await call(route, path, token: nil)
        }
        _ = try await call("GET /v1/workouts", "/v1/workouts?limit=0", token: athlete)
        _ = try await call("GET /v1/samples", "/v1/samples?type=bogus", token: athlete)
        for route in ["GET /v1/workouts/{id}", "GET /v1/workouts/{id}/report", "DELETE /v1/workouts/{id}"] {
            let suffix = route.hasSuffix("report") ? "/report" : ""
            _ = try await call(route, "/v1/workouts/\(unknownID)\(suffix)", token: athlete)
            _ = try await call(route, "/v1/workouts/not-an-id\(suffix)", token: athlete)
        }
        _ = try await call("GET /v1/workouts/{id}/report", "/v1/workouts/\(workout)/report?maxHeartRate=x", token: athlete)
        _ = try await call("DELETE /v1/workouts/{id}", "/v1/workouts/\(workout)", token: coach)
        _ = try await call("DELETE /v1/workouts/{id}", "/v1/workouts/\(workout)", token: nil)

        let open = "PUT /v1/sessions/{id}"
        let session = UUID().uuidString
        let running = try json(["activityType": "running"])
        _ = try await call(open, "/v1/sessions/\(session)", token: athlete, body: running)
        _ = try await call(open, "/v1/sessions/\(session)", token: athlete, body: running)  // 200
        _ = try await call(open, "/v1/sessions/\(session)", token: coach, body: running)
        _ = try await call(open, "/v1/sessions/\(session)", token: nil, body: running)
        _ = try await call(open, "/v1/sessions/\(UUID())", token: athlete, body: try json(["activityType": "running", "x": 1]))
        _ = try await call(open, "/v1/sessions/\(UUID())", token: athlete, body: try json(["activityType": "rowingX"]))
        _ = try await call(open, "/v1/sessions/\(UUID())", token: athlete, body: tooLarge)
        _ = try await call(open, "/v1/sessions/\(UUID())", token: athlete, body: running)  // the second: 201
        _ = try await call(open, "/v1/sessions/\(UUID())", token: athlete, body: running)  // the third: 429
        _ = try await call(open, "/v1/sessions/\(workout)", token: athlete, body: running)  // saved already: 409

        let state = "GET /v1/sessions/{id}"
        _ = try await call(state, "/v1/sessions/\(session)", token: athlete)
        _ = try await call(state, "/v1/sessions/\(unknownID)", token: athlete)
        _ = try await call(state, "/v1/sessions/nope", token: athlete)
        _ = try await call(state, "/v1/sessions/\(session)", token: coach)
        _ = try await call(state, "/v1/sessions/\(workout)", token: athlete)  // saved as a workout: 409
        _ = try await call(state, "/v1/sessions/\(session)", token: nil)

        let batches = "POST /v1/sessions/{id}/batches"
        let path = "/v1/sessions/\(session)/batches"
        let start = Date().addingTimeInterval(-60)
        _ = try await call(batches, path, token: athlete, body: try json(heartRateBatch(seq: 1, start: start, count: 2, startSession: true)))
        _ = try await call(batches, path, token: athlete, body: try json(heartRateBatch(seq: 5, start: start, count: 2)))
        _ = try await call(batches, path, token: athlete, body: try json(["seq": 2, "items": [], "extra": 1]))
        let wrongUnit: [String: Any] = [
            "seq": 2, "items": [["kind": "samples", "samples": [["type": "heartRate", "value": 1, "unit": "m", "start": iso(start)]]]],
        ]
        _ = try await call(batches, path, token: athlete, body: try json(wrongUnit))
        _ = try await call(batches, path, token: athlete, body: tooLarge)
        _ = try await call(batches, path, token: coach, body: try json(heartRateBatch(seq: 2, start: start, count: 2)))
        _ = try await call(batches, "/v1/sessions/\(unknownID)/batches", token: athlete, body: try json(heartRateBatch(seq: 1, start: start, count: 1)))
        _ = try await call(batches, path, token: nil, body: try json(heartRateBatch(seq: 2, start: start, count: 2)))

        let finish = "POST /v1/sessions/{id}/finish"
        _ = try await call(finish, "/v1/sessions/\(session)/finish", token: athlete)  // not ended: 409
        _ = try await call(finish, "/v1/sessions/\(unknownID)/finish", token: athlete)
        _ = try await call(finish, "/v1/sessions/x/finish", token: athlete)
        _ = try await call(finish, "/v1/sessions/\(session)/finish", token: coach)
        _ = try await call(finish, "/v1/sessions/\(session)/finish", token: nil)
        let end = ["seq": 2, "items": [["kind": "end", "at": iso(start.addingTimeInterval(10))]]] as [String: Any]
        _ = try await call(batches, path, token: athlete, body: try json(end))
        _ = try await call(finish, "/v1/sessions/\(session)/finish", token: athlete)  // 200
        _ = try await call("DELETE /v1/workouts/{id}", "/v1/workouts/\(workout)", token: athlete)  // 204

        for (route, statuses) in seen.sorted(by: { $0.key < $1.key }) {
            let listed = documented[route] ?? []
            #expect(statuses.isSubset(of: listed), "\(route) answered \(statuses.sorted()); the document lists \(listed.sorted())")
        }
        // The errors this test provokes are there: every route was exercised, and each kind of error seen.
        #expect(Set(seen.keys) == Set(documented.keys), "\(Set(documented.keys).subtracting(seen.keys))")
        let all = seen.values.reduce(into: Set<Int>()) { $0.formUnion($1) }
        #expect([400, 401, 403, 404, 409, 413, 422, 429].allSatisfy(all.contains), "\(all.sorted())")
        await server.stop()
    }

    /// Sends `head` and `body` on a connection of its own; returns the socket.
    static func sendRequest(port: UInt16, _ head: String, body: Data = Data()) throws -> Int32 {
        let socket = try ConnectionLimitTests.connect(port, timeout: 30)
        var bytes = Array(head.utf8)
        bytes += body
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return socket
    }

    /// Shuts down the sending side of `socket` (the client is gone, as the server takes it), reads what comes until
    /// the server closes the connection and closes the socket: the bytes read as text, and whether the server
    /// closed the connection (false: the read timed out).
    static func hangUpAndRead(_ socket: Int32) -> (text: String, closed: Bool) {
        defer { close(socket) }
        shutdown(socket, Int32(SHUT_WR))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count == 0 { return (String(decoding: answer, as: UTF8.self), true) }
            if count < 0 { return (String(decoding: answer, as: UTF8.self), errno == ECONNRESET) }
            answer += buffer[0..<count]
        }
    }

    /// A cancelled request is logged and counted as 499 `request_cancelled`; its client, gone, reads nothing (a
    /// client that only shut down its sending side sees the connection closed without an answer: the request's
    /// task is cancelled, and with it the writing of its answer).
    @Test("a request whose client hangs up while its store work waits is dropped and logged 499 request_cancelled, as documented")
    func aHungUpRequestIsAnswered499AsDocumented() async throws {
        let documented = try Self.documentedResponses()
        let lines = ErrorBodyTests.LogLines()
        let server = try await TestServer.start {
            $0.logLevel = .debug
            $0.logSink = { line in lines.append(line) }
        }
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "quinn")
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let created = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        let workout = try #require((created.json["workout"] as? [String: Any])?["id"] as? String)
        let port = try #require(URL(string: server.base)?.port.flatMap { UInt16(exactly: $0) })
        // The athlete's share of the store threads held, so every request's store work waits in the queue: the
        // hang-up then always finds it unanswered (never done before the hang-up is seen).
        let key = "athlete:\(athlete.id)"
        let release = Flag()
        let holders = holdStoreThreads(key: key, until: release)
        defer { release.set() }
        #expect(await waitUntil(30, every: .milliseconds(10)) { Offload.store.load(of: key) == holders.count })
        let session = UUID().uuidString
        let json = "application/json"
        let requests: [(route: String, method: String, path: String, body: Data, type: String)] = [
            ("GET /v1/workouts", "GET", "/v1/workouts", Data(), json),
            ("GET /v1/samples", "GET", "/v1/samples", Data(), json),
            ("GET /v1/workouts/{id}", "GET", "/v1/workouts/\(workout)", Data(), json),
            ("GET /v1/workouts/{id}/report", "GET", "/v1/workouts/\(workout)/report", Data(), json),
            ("DELETE /v1/workouts/{id}", "DELETE", "/v1/workouts/\(workout)", Data(), json),
            ("POST /v1/workouts", "POST", "/v1/workouts", fit, "application/octet-stream"),
            ("PUT /v1/sessions/{id}", "PUT", "/v1/sessions/\(session)", Data(#"{"activityType": "running"}"#.utf8), json),
            ("GET /v1/sessions/{id}", "GET", "/v1/sessions/\(session)", Data(), json),
            (
                "POST /v1/sessions/{id}/batches", "POST", "/v1/sessions/\(session)/batches",
                try JSONSerialization.data(withJSONObject: heartRateBatch(seq: 1, start: Date(), count: 1, startSession: true)),
                json
            ),
            ("POST /v1/sessions/{id}/finish", "POST", "/v1/sessions/\(session)/finish", Data(), json),
        ]
        for request in requests {
            let head =
                "\(request.method) \(request.path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: \(request.type)\r\nContent-Length: \(request.body.count)\r\n\r\n"
            let socket = try Self.sendRequest(port: port, head, body: request.body)
            let queued = await waitUntil(30, every: .milliseconds(5)) { Offload.store.load(of: key) == holders.count + 1 }
            #expect(queued, "\(request.route): its store work never waited (\(Offload.store.load(of: key)) calls)")
            let answer = Self.hangUpAndRead(socket)
            #expect(answer.closed && answer.text.isEmpty, "\(request.route) after the hang-up: \(answer.text.prefix(300))")
            #expect(documented[request.route]?.contains(499) == true, "the document does not list 499 for \(request.route)")
            let path = request.path
            let logged = await waitUntil(30, every: .milliseconds(10)) {
                lines.all.contains { $0.contains("499 request_cancelled") && $0.contains(path) && $0.contains(request.method) }
            }
            #expect(logged, "\(request.route): no log line of a 499 request_cancelled: \(lines.all.suffix(3))")
            // The cancelled work left the queue: only the holders are there.
            #expect(await waitUntil(30, every: .milliseconds(10)) { Offload.store.load(of: key) == holders.count })
        }
        release.set()
        for holder in holders { await holder.value }
        // The cancelled delete deleted nothing, and the cancelled open opened nothing.
        #expect(try await server.send("GET", "/v1/workouts/\(workout)", token: token).status == 200)
        #expect(try await server.send("GET", "/v1/sessions/\(session)", token: token).status == 404)
        await server.stop()
    }
}

/// A flag set once, read from store threads.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
