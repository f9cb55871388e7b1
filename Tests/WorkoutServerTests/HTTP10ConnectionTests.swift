import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/1.0 connections keep HTTP/1.0's rule: closed after the response unless the request asked to keep
/// them alive (a client reading to the end of the connection used to wait forever).
@Suite("HTTP/1.0 connections")
struct HTTP10ConnectionTests {
    /// A blocking loopback TCP connection with a receive timeout (no read waits past it).
    final class Connection {
        let socket: Int32

        init(port: Int) throws {
            #if canImport(Glibc)
                socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
                socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
            #endif
            guard socket >= 0 else { throw TestFailure("socket: errno \(errno)") }
            var timeout = timeval(tv_sec: 120, tv_usec: 0)  // a hung server, not a speed: only a failure waits it out
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TestFailure("connect: errno \(errno)") }
        }

        deinit { close(socket) }

        func send(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
        }

        /// Reads until `done` holds for what was read or the connection ends; whether it ended (EOF) too.
        func read(until done: (String) -> Bool) -> (text: String, ended: Bool) {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                if count == 0 { return (String(decoding: received, as: UTF8.self), true) }
                if count < 0, errno == EINTR { continue }  // a signal, not the timeout: read on
                if count < 0 { return (String(decoding: received, as: UTF8.self) + " [errno \(errno)]", false) }  // the timeout
                received += buffer[0..<count]
                if done(String(decoding: received, as: UTF8.self)) { return (String(decoding: received, as: UTF8.self), false) }
            }
        }
    }

    static func port(_ server: TestServer) throws -> Int {
        guard let port = URL(string: server.base)?.port else { throw TestFailure("no port in \(server.base)") }
        return port
    }

    @Test func anHTTP10RequestWithoutKeepAliveHasItsConnectionClosedAfterTheResponse() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let port = try Self.port(server)
        let (text, ended) = try await onOwnThread {
            let connection = try Connection(port: port)
            connection.send("GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            return connection.read { _ in false }
        }
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.lowercased().contains("connection: close"), "\(text)")
        #expect(ended, "the connection was not closed after the response")
        await server.stop()
    }

    @Test func keepAliveIsKeptWhenAskedAndHTTP11StaysOpen() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let port = try Self.port(server)
        for request in ["GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"] {
            let answers = try await onOwnThread {
                let connection = try Connection(port: port)
                return (0..<2).map { _ in
                    connection.send(request)
                    return connection.read { $0.hasSuffix("\"ok\"}") }
                }
            }
            for (text, ended) in answers {
                #expect(text.hasPrefix("HTTP/1.1 200") && !ended, "\(request): \(text)")
            }
        }
        // HTTP/1.1 with Connection: close is closed too.
        let closed = try await onOwnThread {
            let closing = try Connection(port: port)
            closing.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return closing.read { _ in false }.ended
        }
        #expect(closed)
        await server.stop()
    }
}
