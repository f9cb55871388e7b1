import Foundation
import Testing

@testable import WorkoutServer

/// A server whose athletes may keep `limit` live sessions open, with two athletes: the set-up the tests of the
/// session limit and of idle sessions share (each test stops and removes it).
struct LimitedSessionsServer {
    let server: TestServer
    /// The athlete whose sessions the test opens.
    let token: String
    /// A second athlete, with a limit of its own.
    let other: String

    /// Starts the server on `backend`; `idleTimeout` (seconds) releases sessions idle that long.
    static func start(
        backend: Backend = .sqlite, limit: Int, idleTimeout: TimeInterval? = nil
    ) async throws -> LimitedSessionsServer {
        let server = try await TestServer.start(backend: backend) {
            $0.maxOpenSessionsPerAthlete = limit
            if let idleTimeout { $0.sessionIdleTimeout = idleTimeout }
        }
        do {
            let token = try server.directory.addAthlete(name: "ann").token
            let other = try server.directory.addAthlete(name: "bea").token
            return LimitedSessionsServer(server: server, token: token, other: other)
        } catch {
            await server.stop()
            server.remove()
            throw error
        }
    }
}

extension TestServer {
    /// A live session's last acknowledged batch and its number of samples (`GET /v1/sessions/{session}`).
    func sessionState(_ session: String, token: String) async throws -> (Int?, Int?) {
        let state = try await send("GET", "/v1/sessions/\(session)", token: token)
        return (state.json["lastBatch"] as? Int, state.json["samples"] as? Int)
    }
}
