import Foundation
import Testing
import WorkoutServer
@_exported import WorkoutTestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The shared recordings (WorkoutTestSupport's `SharedData`) as the request bodies the tests upload.
extension SharedData {
    static func bytes(_ name: String) throws -> Data { try data(name) }
}

/// An HTTP answer: status, body and the body's JSON when it has one.
struct Answer: Sendable {
    var status: Int
    var body: Data
    /// The `X-Request-Id` header.
    var requestID: String? = nil
    /// The `Allow` header (405 answers).
    var allow: String? = nil

    var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
    /// The typed error's code (`{"error": {"code": …}}`), nil when the body is not one.
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A real server on a free loopback port with its own data folder, stopped by `stop()`.
final class TestServer: Sendable {
    let folder: String
    let base: String
    let directory: ServerDirectory
    /// The PostgreSQL database of the workouts and the directory (nil for SQLite).
    let postgresURL: String?
    /// The server itself (for `shutdown()`, a graceful stop as SIGTERM).
    let server: WorkoutServer
    let task: Task<Void, any Error>

    private init(
        folder: String, base: String, directory: ServerDirectory, postgresURL: String?, server: WorkoutServer,
        task: Task<Void, any Error>
    ) {
        self.server = server
        self.folder = folder
        self.base = base
        self.directory = directory
        self.postgresURL = postgresURL
        self.task = task
    }

    /// Starts a server (on `folder`, a new one by default) keeping workouts in SQLite files or in PostgreSQL:
    /// `postgresURL`, else a new database of the test cluster (so that athlete names never collide).
    static func start(
        folder: String? = nil, bodyLimit: Int = 64 * 1024 * 1024, backend: Backend = .sqlite,
        postgresURL givenURL: String? = nil, readURL: String? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        let folder =
            folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("workout-server-\(UUID())").path
        var postgresURL = givenURL
        if backend == .postgres, postgresURL == nil {
            postgresURL = try TestPostgres.freshDatabase()
        }
        var configuration = ServerConfiguration(
            dataFolder: folder, postgresURL: postgresURL, poolSize: 4, port: 0, bodyLimit: bodyLimit,
            logLevel: .critical)
        configuration.readURL = readURL
        configure(&configuration)
        let server = try WorkoutServer(configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task {
            defer { continuation.finish() }
            try await server.run(handleSignals: false) { port in continuation.yield(port) }
        }
        guard let port = await ports.first(where: { _ in true }), port > 0 else {
            throw TestFailure("the server did not start")
        }
        let directory =
            try postgresURL.map { url throws(ServerSetupError) in try ServerDirectory(postgresURL: url) }
            ?? ServerDirectory(folder: folder)
        return TestServer(
            folder: folder, base: "http://127.0.0.1:\(port)", directory: directory, postgresURL: postgresURL, server: server,
            task: task)
    }

    /// Stops the server (as abruptly as a crash for the live sessions: nothing is committed on the way out).
    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    func remove() { try? FileManager.default.removeItem(atPath: folder) }

    /// The longest wait for an answer by default: a bound for a hung server, not a speed (a whole first pass of
    /// the suite on a shared two-core machine has taken over 60 s to answer an upload).
    static let answerTimeout: TimeInterval = 300

    /// The client of requests with the usual time-out (URLSession's shared one says 60 s).
    static let client: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = answerTimeout
        configuration.timeoutIntervalForResource = max(answerTimeout, configuration.timeoutIntervalForResource)
        return URLSession(configuration: configuration)
    }()

    /// Sends a request; `token` nil sends no Authorization header; a body goes as `contentType`
    /// (application/octet-stream by default, a FIT upload's); `timeout`: the longest wait for the answer, seconds.
    func send(
        _ method: String, _ path: String, token: String?, body: Data? = nil, authorization: String? = nil,
        contentType: String = "application/octet-stream", timeout: TimeInterval = TestServer.answerTimeout
    ) async throws -> Answer {
        guard let url = URL(string: base + path) else { throw TestFailure("bad test URL \(path)") }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        request.httpBody = body
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        if body != nil { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        // Another time-out than the usual one on a session of its own.
        var session = Self.client
        if timeout != Self.answerTimeout {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = timeout
            configuration.timeoutIntervalForResource = max(timeout, configuration.timeoutIntervalForResource)
            session = URLSession(configuration: configuration)
        }
        defer { if session !== Self.client { session.finishTasksAndInvalidate() } }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestFailure("no HTTP response for \(path)") }
        return Answer(
            status: http.statusCode, body: data, requestID: http.value(forHTTPHeaderField: "X-Request-Id"),
            allow: http.value(forHTTPHeaderField: "Allow"))
    }

    /// Sends `object` as a JSON body (Content-Type application/json).
    func json(_ method: String, _ path: String, token: String?, _ object: Any) async throws -> Answer {
        try await send(
            method, path, token: token, body: try JSONSerialization.data(withJSONObject: object),
            contentType: "application/json")
    }
}

/// ISO 8601 with milliseconds, as the API writes dates.
func iso(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
}

/// A batch of `count` heart-rate samples one second apart from `start` (optionally starting the session).
func heartRateBatch(seq: Int, start: Date, count: Int, first value: Double = 120, startSession: Bool = false)
    -> [String: Any]
{
    var items: [[String: Any]] = []
    if startSession { items.append(["kind": "start", "at": iso(start)]) }
    let samples: [[String: Any]] = (0..<count).map { index in
        ["type": "heartRate", "value": value + Double(index), "start": iso(start.addingTimeInterval(Double(index)))]
    }
    items.append(["kind": "samples", "samples": samples])
    return ["seq": seq, "items": items]
}
