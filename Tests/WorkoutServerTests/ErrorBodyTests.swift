import Foundation
import Synchronization
import Testing

@testable import WorkoutServer

/// Error bodies never show internals (SQL, file paths, database URLs); every answer carries a request id
/// (`X-Request-Id`, and `requestId` in error bodies) and the server's log line of the error has the same id
/// with the detail.
@Suite("error bodies", .serialized)
struct ErrorBodyTests {
    /// Whether `text` shows something of the server's inside.
    static func leaks(_ text: String) -> String? {
        if text.contains("/") { return "a path" }
        if text.contains("://") { return "a URL" }
        let sql = try? NSRegularExpression(
            pattern: #"\b(SELECT|INSERT|UPDATE|DELETE FROM|FROM|WHERE|CREATE|TABLE|JOIN|EXISTS|relation|sqlite|postgres)\b"#,
            options: [.caseInsensitive])
        if let sql, sql.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil { return "SQL or a database" }
        return nil
    }

    /// The server's log lines.
    final class LogLines: Sendable {
        private let lines = Mutex<[String]>([])
        init() {}
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    static func start(_ backend: Backend, lines: LogLines) async throws -> TestServer {
        try await TestServer.start(backend: backend) {
            $0.logLevel = .error
            $0.logSink = { line in lines.append(line) }
            $0.tokenCacheLifetime = 600
        }
    }

    static func check(_ answer: Answer, lines: LogLines, detail: String) {
        #expect(answer.status == 503 && answer.errorCode == "unavailable", "\(answer.status) \(answer.text)")
        let body = answer.text
        #expect(leaks(body) == nil, "the body shows \(leaks(body) ?? ""): \(body)")
        let id = (answer.json["error"] as? [String: Any])?["requestId"] as? String
        #expect(id != nil && id == answer.requestID, "body \(String(describing: id)), header \(String(describing: answer.requestID))")
        guard let id else { return }
        let logged = lines.all.filter { $0.contains(id) }
        #expect(logged.contains { $0.contains(detail) }, "no log line with request id \(id) and '\(detail)': \(lines.all)")
    }

    @Test func aStoreThatCannotBeOpenedAnswers503WithoutItsPath() async throws {
        let lines = LogLines()
        let server = try await Self.start(.sqlite, lines: lines)
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "ona")
        // The athlete's store file is not a database (damaged, or replaced).
        let folder = server.folder + "/athletes"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/\(athlete.id.uuidString.lowercased()).sqlite"
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        for request in ["/v1/workouts", "/v1/samples", "/v1/sessions/\(UUID())"] {
            let answer = try await server.send("GET", request, token: token)
            Self.check(answer, lines: lines, detail: path)
        }
        await server.stop()
    }

    @Test(.enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func aFailingPostgreSQLQueryAnswers503WithoutSQLOrTheURL() async throws {
        let lines = LogLines()
        let server = try await Self.start(.postgres, lines: lines)
        defer { server.remove() }
        let url = try #require(server.postgresURL)
        let token = try server.directory.addAthlete(name: "pia").token
        #expect(try await server.send("GET", "/v1/workouts", token: token).status == 200)
        // The workouts' table is gone from under the server (a botched migration, say): every query fails.
        _ = try TestPostgres.psql(url, "ALTER TABLE workout RENAME TO workout_away")
        let answer = try await server.send("GET", "/v1/workouts", token: token)
        Self.check(answer, lines: lines, detail: "workout")
        #expect(!answer.text.contains(url), "the database URL is in the body")
        await server.stop()
    }

    /// Renames the workouts' table of the server's store for `athlete` (a botched migration, say): every read of a
    /// saved workout fails while the journal's tables still answer.
    static func renameWorkoutTable(_ server: TestServer, athlete: Athlete) async throws {
        try await renameTable("workout", server, athlete: athlete)
    }

    /// Renames `table` of the server's store for `athlete` to `table`_away, behind the server's back.
    static func renameTable(_ table: String, _ server: TestServer, athlete: Athlete) async throws {
        if let url = server.postgresURL {
            _ = try TestPostgres.psql(url, "ALTER TABLE \(table) RENAME TO \(table)_away")
            return
        }
        // Another connection to the athlete's SQLite file, as an administrator's would be (Python's sqlite3).
        let path = server.folder + "/athletes/\(athlete.id.uuidString.lowercased()).sqlite"
        let status = try await onOwnThread { () throws -> Int32 in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", "-c",
                "import sqlite3, sys; sqlite3.connect(sys.argv[1], isolation_level=None)"
                    + ".execute('ALTER TABLE \(table) RENAME TO \(table)_away')",
                path,
            ]
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        try #require(status == 0, "python3 could not rename the table in \(path)")
    }

    @Test(
        "a saved session whose store cannot be read answers 503, not 404 (finish, and a batch sent again)",
        arguments: Backend.available)
    func aSavedSessionWhoseStoreCannotBeReadAnswers503Not404(_ backend: Backend) async throws {
        let lines = LogLines()
        let server = try await Self.start(backend, lines: lines)
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "ria")
        let session = UUID().uuidString
        let start = Date().addingTimeInterval(-60)
        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"]).status == 201)
        var first = heartRateBatch(seq: 1, start: start, count: 3, startSession: true)
        first["items"] = (first["items"] as? [[String: Any]] ?? []) + [
            ["kind": "stop", "at": iso(start.addingTimeInterval(5))], ["kind": "end", "at": iso(start.addingTimeInterval(5))],
        ]
        #expect(try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, first).json["ack"] as? Int == 1)
        let saved = try await server.send("POST", "/v1/sessions/\(session)/finish", token: token)
        try #require(saved.status == 200, "\(saved.status) \(saved.text)")
        try await Self.renameWorkoutTable(server, athlete: athlete)
        // The session is saved, but the store cannot say so now: "try again", not "no such session" (a client
        // told 404 would give up on a session it recorded).
        let finish = try await server.send("POST", "/v1/sessions/\(session)/finish", token: token)
        Self.check(finish, lines: lines, detail: "workout")
        let second = heartRateBatch(seq: 2, start: start.addingTimeInterval(5), count: 3, first: 130)
        let batch = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, second)
        Self.check(batch, lines: lines, detail: "workout")
        await server.stop()
    }

    /// Opens a session for `token`, sends it one batch that starts and ends it, and keeps hold of the session
    /// object as a request racing the finish would; then finishes it over HTTP. The session's id and the object.
    static func savedSession(
        _ server: TestServer, athlete: Athlete, token: String
    ) async throws -> (UUID, LiveSession) {
        let session = UUID()
        let start = Date().addingTimeInterval(-60)
        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"]).status == 201)
        var first = heartRateBatch(seq: 1, start: start, count: 3, startSession: true)
        first["items"] = (first["items"] as? [[String: Any]] ?? []) + [
            ["kind": "stop", "at": iso(start.addingTimeInterval(5))], ["kind": "end", "at": iso(start.addingTimeInterval(5))],
        ]
        #expect(try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, first).json["ack"] as? Int == 1)
        let held = try #require(await server.server.sessions.inMemory(athlete: athlete, id: session))
        let saved = try await server.send("POST", "/v1/sessions/\(session)/finish", token: token)
        try #require(saved.status == 200, "\(saved.status) \(saved.text)")
        return (session, held)
    }

    /// A finish that finds its session already saved (by a request racing it) read the saved workout with `try?`:
    /// a store failing then was answered 404 "not known" for a session that is saved. Now 503 as every store
    /// failure, the cause kept for the log.
    @Test(arguments: Backend.available)
    func aFinishRacingASaveWhileTheStoreFailsAnswers503NotNotFound(_ backend: Backend) async throws {
        let server = try await TestServer.start(backend: backend)
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "rut")
        let (_, held) = try await Self.savedSession(server, athlete: athlete, token: token)
        // The saved workout's statistics cannot be read (the table gone from under the server).
        try await Self.renameTable("statistic", server, athlete: athlete)
        do {
            let workout = try await held.finish()
            Issue.record("finished again as \(workout.id) while the store fails")
        } catch {
            #expect(error.statusCode == 503 && error.code == "unavailable", "\(error)")
            #expect(Self.leaks(error.message) == nil, "\(error.message)")
            #expect(error.detail?.contains("statistic") == true, "the store's error is kept for the log: \(error)")
        }
        await server.stop()
    }

    /// Opening again the id of a saved session whose saved workout cannot be read (the store failing) answered 503
    /// "being opened or saved by another request", a guess, with nothing in the log: the store's error was dropped
    /// (`try?`). Now as every store failure: 503, nothing of the inside in the body, the cause logged.
    @Test(arguments: Backend.available)
    func reopeningASavedSessionWhileTheStoreFailsAnswers503AndLogsWhy(_ backend: Backend) async throws {
        let lines = LogLines()
        let server = try await Self.start(backend, lines: lines)
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "sol")
        let (session, _) = try await Self.savedSession(server, athlete: athlete, token: token)
        // Opening writes no statistics: the id is found taken, then the saved workout cannot be read.
        try await Self.renameTable("statistic", server, athlete: athlete)
        let answer = try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"])
        Self.check(answer, lines: lines, detail: "statistic")
        #expect(answer.errorMessage?.contains("another request") == false, "\(answer.text)")
        await server.stop()
    }

    @Test func everyAnswerCarriesARequestID() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let health = try await server.send("GET", "/health", token: nil)
        let missing = try await server.send("GET", "/v1/nothing", token: nil)
        let unauthorized = try await server.send("GET", "/v1/workouts", token: nil)
        for answer in [health, missing, unauthorized] {
            #expect(answer.requestID.map { !$0.isEmpty } == true, "\(answer.status) without X-Request-Id")
        }
        #expect((unauthorized.json["error"] as? [String: Any])?["requestId"] as? String == unauthorized.requestID)
        #expect(health.requestID != unauthorized.requestID)
        await server.stop()
    }
}
