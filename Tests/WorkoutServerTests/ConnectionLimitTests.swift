import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Connections are bounded in time and number (issue 27: connections that sent nothing, half a header or stayed
/// idle after an answer were never closed, and 20,400 idle connections exhausted the descriptors: `/health`
/// stopped answering for 40 s). The server runs as a process of its own, with its descriptor limit lowered.
@Suite("connection limits", .serialized)
struct ConnectionLimitTests {
    /// The built `workout` executable beside the test bundle.
    static func executable() throws -> String {
        let path = BuiltProducts.executable("workout").path
        guard FileManager.default.isExecutableFile(atPath: path) else { throw TestFailure("no workout executable") }
        return path
    }

    /// `workout serve` on a free port, under `ulimit -n descriptors`, as a child process.
    final class ServerProcess {
        let process = Process()
        let output = Pipe()
        let folder: String
        var port: UInt16 = 0

        init(descriptors: Int, arguments: [String]) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-conn-\(UUID())").path
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [
                "-c",
                "ulimit -n \(descriptors) && folder=$1 && shift && "
                    + "exec \"$0\" serve --db \"$folder\" --port 0 --log-level critical \"$@\"",
                try ConnectionLimitTests.executable(), folder,
            ] + arguments
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            while true {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                line.append(byte)
            }
            let text = String(decoding: line, as: UTF8.self)
            guard text.hasPrefix("listening on "), let port = text.split(separator: ":").last.flatMap({ UInt16($0) })
            else {
                process.terminate()
                throw TestFailure("workout serve printed '\(text)'")
            }
            self.port = port
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// A blocking loopback socket connected to `port`, reads and writes timing out after `timeout` seconds.
    static func connect(_ port: UInt16, timeout: Double) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(socket)
            throw ConnectFailure(code: code)
        }
        return socket
    }

    /// A `connect` that failed, with its errno (`ECONNREFUSED`: nothing listens on the port).
    struct ConnectFailure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { "connect: errno \(code)" }
    }

    static func send(_ socket: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the server closes the connection (true) or `deadline` passes (false), discarding what comes.
    static func closedByServer(_ socket: Int32, before deadline: ContinuousClock.Instant) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR { return true }  // reset
        }
        return false
    }

    /// `GET /health` on a new connection: the status line's code and how long connecting and answering took.
    static func health(_ port: UInt16, timeout: Double = 5) throws -> (code: Int, took: Duration) {
        let started = ContinuousClock.now
        let socket = try connect(port, timeout: timeout)
        defer { close(socket) }
        send(socket, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[0..<count]
            if String(decoding: answer, as: UTF8.self).contains("\"ok\"") { break }
        }
        let took = ContinuousClock.now - started
        let text = String(decoding: answer, as: UTF8.self)
        let code = text.hasPrefix("HTTP/1.1 ") ? Int(text.dropFirst(9).prefix(3)) ?? 0 : 0
        return (code, took)
    }

    /// The value of the counter `name` in `GET /metrics` (0 when absent).
    static func metric(_ name: String, port: UInt16) throws -> Int {
        let socket = try connect(port, timeout: 10)
        defer { close(socket) }
        send(socket, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        let line = String(decoding: answer, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
    }

    @Test func silentHalfSentAndIdleConnectionsAreClosedAfterTheIdleTimeout() throws {
        let server = try ServerProcess(descriptors: 1024, arguments: ["--idle-timeout", "1"])
        defer { server.stop() }
        // Sends nothing.
        let silent = try Self.connect(server.port, timeout: 0.2)
        defer { close(silent) }
        // Stops in the middle of its request head.
        let partial = try Self.connect(server.port, timeout: 0.2)
        defer { close(partial) }
        Self.send(partial, "GET /health HTTP/1.1\r\nHost: 127.")
        // Gets an answer, then stays.
        let idle = try Self.connect(server.port, timeout: 0.2)
        defer { close(idle) }
        Self.send(idle, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let deadline = ContinuousClock.now + .seconds(15)
        #expect(Self.closedByServer(silent, before: deadline), "a silent connection stays open")
        #expect(Self.closedByServer(partial, before: deadline), "a connection with half a header stays open")
        #expect(Self.closedByServer(idle, before: deadline), "an idle connection after an answer stays open")
    }

    @Test func twentyThousandIdleConnectionsLeaveHealthAnsweringWithTheDescriptorLimitLowered() throws {
        let server = try ServerProcess(descriptors: 1024, arguments: [])
        defer { server.stop() }
        // Two client processes open 10,000 connections each and hold them (this process's own descriptor limit
        // is too low for all of them); non-blocking connects, as fast as the kernel takes them.
        let script = """
            import socket, sys, errno
            port, count = int(sys.argv[1]), int(sys.argv[2])
            held = []
            for _ in range(count):
                s = socket.socket()
                s.setblocking(False)
                code = s.connect_ex(("127.0.0.1", port))
                if code not in (0, errno.EINPROGRESS):
                    print("refused", code, flush=True)
                    break
                held.append(s)
            print("opened", len(held), flush=True)
            sys.stdin.read()
            """
        var openers: [(Process, Pipe, Pipe)] = []
        defer {
            for (process, input, _) in openers {
                try? input.fileHandleForWriting.close()
                process.waitUntilExit()
            }
        }
        var opened = 0
        for _ in 0..<2 {
            let process = Process()
            let (input, output) = (Pipe(), Pipe())
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n 10100 && exec python3 -c \"$0\" \"$@\"", script, "\(server.port)", "10000"]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            openers.append((process, input, output))
        }
        for (_, _, output) in openers {
            let line = String(decoding: output.fileHandleForReading.availableDataLine(), as: UTF8.self)
            opened += Int(line.split(separator: " ").last ?? "") ?? 0
            #expect(line.hasPrefix("opened"), "\(line)")
        }
        #expect(opened == 20_000, "\(opened) connections opened")
        // The clients' connects return before the server has taken them from its backlog (and a handshake the
        // kernel's full accept queue dropped is never taken): wait, with a deadline, until the server has
        // admitted no new connection but this test's own for 3 s, so /health is timed in the state the limit is
        // about (a descriptor limit's worth of connections held, the rest closed to make room), not behind a
        // backlog still being drained.
        var polls = 0
        var (admitted, steadySince) = (-1, ContinuousClock.now)
        let deadline = ContinuousClock.now + .seconds(120)
        // At least one poll: a thread descheduled for 3 s before the first check (the machine busy with the
        // 20,000 handshakes) once left the loop before it polled at all (CI of 70e87e6: "admitted only -1").
        while ContinuousClock.now < deadline, admitted < 0 || ContinuousClock.now - steadySince < .seconds(3) {
            polls += 1
            let now = try Self.metric("workout_connections_admitted_total", port: server.port) - polls
            if now != admitted { (admitted, steadySince) = (now, ContinuousClock.now) }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(ContinuousClock.now < deadline, "the server was still admitting connections after 120 s")
        #expect(admitted > 10_000, "the server admitted only \(admitted) of the 20,000 connections")
        let evicted = try Self.metric("workout_connections_evicted_total", port: server.port)
        #expect(evicted >= admitted - 1024, "\(admitted) connections admitted, only \(evicted) closed to make room")
        var times: [Duration] = []
        for _ in 0..<5 {
            let (code, took) = try Self.health(server.port)
            #expect(code == 200, "/health answered \(code) after \(took)")
            times.append(took)
        }
        times.sort()
        print("/health with 20,000 connections opened against ulimit -n 1024 (\(admitted) admitted, \(evicted) closed to make room): \(times)")
        #expect(times[2] < .milliseconds(100), "/health took \(times) with 20,000 connections opened")
        #expect(server.process.isRunning, "the server is still running")
    }
}

extension FileHandle {
    /// The bytes up to the next newline (without it), or to the end.
    func availableDataLine() -> Data {
        var line = Data()
        while true {
            let byte = readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { return line }
            line.append(byte)
        }
    }
}
