import ArgumentParser
import Foundation
import Synchronization
import WorkoutSensors
import WorkoutSimulator

/// The simulator's ANT port: an emulated USB ANT stick behind a pseudo-terminal. A thread reads what
/// the host writes and answers as the stick would; the race loop passes the sensors' messages
/// through the stick (only configured, open channels deliver anything).
final class ANTPort: Sendable {
    let terminal: PseudoTerminal
    let emulation: ANTStickEmulation
    private let stopped = Mutex(false)
    private let finished = Mutex(false)
    /// Bytes dropped because nobody read them; writes of both threads go one at a time.
    private let dropped = Mutex(0)

    init(terminal: PseudoTerminal, emulation: ANTStickEmulation) {
        self.terminal = terminal
        self.emulation = emulation
        let thread = Thread { [self] in
            while !stopped.withLock({ $0 }) {
                let bytes = (try? terminal.read(timeout: .milliseconds(20))) ?? []
                if !bytes.isEmpty { send(emulation.hostWrote(bytes)) }
            }
            finished.withLock { $0 = true }
        }
        thread.name = "ant stick"
        thread.start()
    }

    /// Writes what the stick says to the host.
    func send(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        dropped.withLock { $0 += (try? terminal.write(bytes, whenFull: .drop)) ?? bytes.count }
    }

    var droppedBytes: Int { dropped.withLock { $0 } }

    /// Stops answering (the reader thread ends within its read timeout).
    func close() {
        stopped.withLock { $0 = true }
        while !finished.withLock({ $0 }) { usleep(1000) }
    }
}

/// `watch-sim`: plays a simulated race as serial devices (pseudo-terminals) or byte files.
@main
struct WatchSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch-sim",
        abstract: "Play a simulated race as serial sensors: NMEA GPS, ANT+ sensors, watch-link.",
        discussion: """
            Opens one pseudo-terminal per port (gps: NMEA 0183; ant: an emulated USB ANT stick, silent until \
            the host configures it, passing on the ANT+ sensors' pages at about 4 Hz; watch: the watch-link \
            protocol) and prints their paths, waits, then streams the race at the chosen speed. With --out, writes the three byte streams to files instead. The same scenario \
            and seed always give the same bytes.
            """)

    @Argument(help: "A built-in scenario name or a scenario JSON file.") var scenario: String
    @Option(help: "Seed of the simulated athlete and sensors.") var seed: UInt64 = 1
    @Option(help: "Race seconds per wall second (0: as fast as possible).") var speed: Double = 1
    @Option(help: "Write gps.nmea, ant.bin and watch.wl into this folder instead of pseudo-terminals.")
    var out: String?
    @Option(help: "Seconds to wait after printing the pseudo-terminal paths.") var wait: Double = 2
    @Option(
        help:
            "Keep links DIR/gps, DIR/ant and DIR/watch pointing at the current pseudo-terminals (they change on reconnect)."
    )
    var linkDir: String?
    @Option(
        help: ArgumentHelp(
            "The ANT+ network key the emulated sensors talk on (16 hex digits; default $WORKOUT_ANT_NETWORK_KEY, else any key reaches them).",
            valueName: "hex"))
    var antNetworkKey: String?

    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Opens a pseudo-terminal for `port`, announces it and points the port's link at it.
    private func connect(_ port: WirePort, reconnect: Bool) throws -> PseudoTerminal {
        let terminal = try PseudoTerminal()
        say("\(port.rawValue) \(reconnect ? "reconnected " : "")\(terminal.path)")
        if let linkDir {
            let link = (linkDir as NSString).appendingPathComponent(port.rawValue)
            try FileManager.default.createDirectory(atPath: linkDir, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: link)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: terminal.path)
        }
        return terminal
    }

    /// The lines (CR LF terminated) of a watch-link byte stream.
    static func lines(_ bytes: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var current: [UInt8] = []
        for byte in bytes {
            current.append(byte)
            if byte == 0x0A {
                lines.append(current)
                current = []
            }
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }

    /// The race second a watch-link line happened at (its milliseconds field), if it has one.
    static func watchTime(_ line: [UInt8]) -> Double? {
        var decoder = WatchLinkDecoder()
        for reading in decoder.decode(line) {
            if case .watchMilliseconds(let milliseconds)? = reading.time { return Double(milliseconds) / 1000 }
        }
        return nil
    }

    func run() throws {
        let scenario: Scenario
        do {
            scenario = try Scenario.load(self.scenario)
        } catch {
            throw ValidationError(error.description)
        }
        var simulator = WatchSimulator(scenario: scenario, seed: seed)
        var emitter = WireEmitter(start: simulator.start)
        if let out {
            var streams: [WirePort: [UInt8]] = emitter.preamble()
            while let second = simulator.next() {
                for (port, bytes) in emitter.encode(second) { streams[port, default: []] += bytes }
            }
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            for (port, name) in [(WirePort.gps, "gps.nmea"), (.ant, "ant.bin"), (.watch, "watch.wl")] {
                try Data(streams[port] ?? []).write(to: URL(fileURLWithPath: out).appendingPathComponent(name))
                print("\(port.rawValue) \(out)/\(name) \(streams[port]?.count ?? 0) bytes")
            }
            return
        }
        var networkKey: [UInt8]?
        if let text = antNetworkKey ?? ProcessInfo.processInfo.environment["WORKOUT_ANT_NETWORK_KEY"], !text.isEmpty {
            do {
                networkKey = try ANTNetworkKey(hex: text).bytes
            } catch {
                throw ValidationError("--ant-network-key: \(error.description)")
            }
        }
        var terminals: [WirePort: PseudoTerminal] = [:]
        for port in WirePort.allCases { terminals[port] = try connect(port, reconnect: false) }
        // The ANT port is a USB stick: silent until the host configures it; a replug resets it.
        let newStick = { (terminal: PseudoTerminal?) in
            terminal.map { ANTPort(terminal: $0, emulation: ANTStickEmulation(networkKey: networkKey)) }
        }
        var antPort = newStick(terminals[.ant])
        var antDropped = 0
        defer { antPort?.close() }
        var sensorPages = Dictionary(
            uniqueKeysWithValues: WireEmitter.ANTSensorSlot.allCases.map {
                ($0, ANTSensorPages(sensor: $0.sensor, model: UInt16($0.rawValue) + 1))
            })
        Thread.sleep(forTimeInterval: wait)
        var preamble = emitter.preamble()
        preamble[.ant] = []
        // Like a serial port, a pseudo-terminal nobody reads overruns: bytes are dropped and counted.
        var dropped: [WirePort: Int] = [:]
        for (port, bytes) in preamble where !bytes.isEmpty {
            dropped[port, default: 0] += try terminals[port]?.write(bytes, whenFull: .drop) ?? 0
        }
        let wallStart = Date()
        while let second = simulator.next() {
            // A disconnect closes the port's pseudo-terminal; when it ends a new one opens (and the
            // link, if any, follows it), and the port starts again with its preamble.
            for port in WirePort.allCases {
                if second.disconnected.contains(port), terminals[port] != nil {
                    if port == .ant {
                        antDropped += antPort?.droppedBytes ?? 0
                        antPort?.close()
                        antPort = nil
                    }
                    terminals[port] = nil
                    say("\(port.rawValue) disconnected")
                } else if !second.disconnected.contains(port), terminals[port] == nil {
                    terminals[port] = try connect(port, reconnect: true)
                    if port == .ant { antPort = newStick(terminals[.ant]) }
                    if let bytes = preamble[port], !bytes.isEmpty {
                        dropped[port, default: 0] += try terminals[port]?.write(bytes, whenFull: .drop) ?? 0
                    }
                }
            }
            // Each message leaves when it happened, as real devices send: a watch line at its own
            // instant (a length when it ends, a button when pressed), ANT and GPS data about the
            // second at the second's end. As fast as possible (speed 0), in that order at once.
            var writes: [(due: Double, port: WirePort, bytes: [UInt8], ant: WireEmitter.ANTSensorSlot?)] = []
            let end = Double(second.offset + 1)
            let encoded = emitter.encode(second)
            // Each ANT+ sensor sends about 4 messages a second (its profile's period); the stick
            // passes on what reaches an open channel.
            for (slot, page) in emitter.antPages {
                for quarter in 1...4 { writes.append((Double(second.offset) + Double(quarter) / 4, .ant, page, slot)) }
            }
            for (port, bytes) in encoded where !bytes.isEmpty && port != .ant {
                if port == .watch {
                    for line in Self.lines(bytes) {
                        let at = Self.watchTime(line).map { min(max($0, Double(second.offset)), end) } ?? end
                        writes.append((at, port, line, nil))
                    }
                } else {
                    writes.append((end, port, bytes, nil))
                }
            }
            for write in writes.sorted(by: { ($0.due, $0.ant?.rawValue ?? 9) < ($1.due, $1.ant?.rawValue ?? 9) }) {
                if speed > 0 {
                    let pause = wallStart.addingTimeInterval(write.due / speed).timeIntervalSinceNow
                    if pause > 0 { Thread.sleep(forTimeInterval: pause) }
                }
                if let slot = write.ant {
                    guard let port = antPort, var pages = sensorPages[slot] else { continue }
                    port.send(port.emulation.transmit(slot.sensor, page: pages.next(write.bytes), at: write.due))
                    sensorPages[slot] = pages
                    continue
                }
                dropped[write.port, default: 0] += try terminals[write.port]?.write(write.bytes, whenFull: .drop) ?? 0
            }
            if let port = antPort { port.send(port.emulation.advance(to: end)) }
            if speed > 0 {
                let pause = wallStart.addingTimeInterval(end / speed).timeIntervalSinceNow
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            }
        }
        dropped[.ant, default: 0] += antDropped + (antPort?.droppedBytes ?? 0)
        for port in WirePort.allCases where (dropped[port] ?? 0) > 0 {
            say("\(port.rawValue): \(dropped[port] ?? 0) bytes dropped (nobody was reading fast enough)")
        }
    }
}
