import Foundation
import Synchronization
import Testing

@testable import WorkoutServer

#if canImport(Glibc)
    import Glibc
#endif

/// A server stopping while clients connect (issue 27): a connection accepted as the server stopped crashed the
/// whole process ("Deinited NIOAsyncWriter without calling finish()": NIO dropped it unserved with its writer
/// unfinished), once in four runs of the uploader's resume tests, whose uploader reconnects across the stop.
@Suite("server shutdown", .serialized)
struct ServerShutdownTests {
    /// Opens loopback connections to `port` one after the other, as fast as it can, until one is refused (the
    /// server no longer listens) or `stop` is set; keeps every one it opened.
    ///
    /// It stops at the first refusal: the port is free from then on, and a server of another suite running beside
    /// this one may bind it next (it was flooded once, when the connector went on until told to stop).
    final class Connector: Sendable {
        let port: UInt16
        let stop = Atomic<Bool>(false)
        let opened = Mutex<[Int32]>([])
        let done = Atomic<Bool>(false)

        init(port: UInt16) {
            self.port = port
            Thread.detachNewThread { [self] in
                while !stop.load(ordering: .relaxed) {
                    let socket: Int32
                    do {
                        socket = try ConnectionLimitTests.connect(port, timeout: 5)
                    } catch let failure as ConnectionLimitTests.ConnectFailure where failure.code == ECONNREFUSED {
                        break
                    } catch {
                        // Not answered in time (a full backlog): the next try a millisecond later.
                        usleep(1000)
                        continue
                    }
                    // Once nothing listens, a connect to the port may pick that very port as its own and connect
                    // to itself (TCP simultaneous open): no server's connection, left out.
                    if Self.localPort(socket) == port {
                        close(socket)
                    } else {
                        opened.withLock { $0.append(socket) }
                    }
                }
                done.store(true, ordering: .releasing)
            }
        }

        var count: Int { opened.withLock { $0.count } }

        static func localPort(_ socket: Int32) -> UInt16 {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
            }
            return UInt16(bigEndian: address.sin_port)
        }
    }

    @Test("a server stopped while connections keep arriving stops without crashing and closes every one it accepted")
    func aServerStoppedWhileConnectionsArriveClosesThemAll() async throws {
        // Each round: a server, a client opening connection after connection, the server stopped in the middle of
        // them: its task cancelled (as TestServer.stop does) or, every other round, gracefully (as SIGTERM does).
        // Before the fix, one round in a few crashed the process.
        for round in 0..<12 {
            let server = try await TestServer.start()
            defer { server.remove() }
            let port = try #require(URL(string: server.base)?.port.flatMap { UInt16(exactly: $0) })
            let connector = Connector(port: port)
            // The stop comes once connections are arriving (each round a little later).
            #expect(await waitUntil(30, every: .milliseconds(1)) { connector.count >= 10 + round * 10 })
            if round.isMultiple(of: 2) {
                await server.stop()
            } else {
                await server.server.shutdown()
                _ = try? await server.task.value
            }
            connector.stop.store(true, ordering: .relaxed)
            #expect(await waitUntil(30) { connector.done.load(ordering: .acquiring) })
            let sockets = connector.opened.withLock { $0 }
            defer { sockets.forEach { close($0) } }
            // Every connection the server accepted is closed by it, none left open (served or not). A request goes
            // on each first: a connect the kernel completed as the listening socket closed has no server side left
            // and says nothing until it sends (then it is reset); a server's connection left open would answer it
            // or keep silent, and stay open.
            // (Blocking sends and reads, on a thread of their own: not on the cooperative pool the servers of the
            // suites beside this one answer on.)
            let open = await onOwnThread {
                for socket in sockets { ConnectionLimitTests.send(socket, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n") }
                let deadline = ContinuousClock.now + .seconds(30)
                return sockets.filter { !ConnectionLimitTests.closedByServer($0, before: deadline) }.count
            }
            #expect(open == 0, "round \(round): \(open) of \(sockets.count) connections left open after the stop")
        }
    }

    @Test("a server stopped by cancellation still closes and releases its live sessions, journals kept",
        arguments: Backend.available)
    func sessionsOfACancelledServerAreStillClosed(_ backend: Backend) async throws {
        let server = try await TestServer.start(backend: backend)
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "ida").token
        let session = UUID().uuidString
        let start = Date().addingTimeInterval(-60)
        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "cycling"]).status == 201)
        let first = heartRateBatch(seq: 1, start: start, count: 5, startSession: true)
        #expect(try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, first).json["ack"] as? Int == 1)
        // The session closer and the idle reaper run in the server's task, cancelled when it is stopped so: their
        // store work has no client to hang up and must run all the same.
        let released = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let released = await server.server.sessions.releaseIdle(olderThan: 0)
            await server.server.sessions.closeAll()
            return released
        }.value
        #expect(released == 1, "the session was not released in a cancelled task")
        #expect(await server.server.sessions.count == 0)
        // The journal was kept: the next batch resumes the session, nothing lost.
        let second = heartRateBatch(seq: 2, start: start.addingTimeInterval(5), count: 5, first: 130)
        let answer = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, second)
        #expect(answer.status == 200 && answer.json["ack"] as? Int == 2, "\(answer.text)")
        await server.stop()
    }
}
