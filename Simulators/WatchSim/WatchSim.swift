import ArgumentParser
import Foundation
import WorkoutSensors
import WorkoutSimulator

/// `watch-sim`: plays a simulated race as serial devices (pseudo-terminals) or byte files.
@main
struct WatchSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch-sim",
        abstract: "Play a simulated race as serial sensors: NMEA GPS, ANT+ sensors, watch-link.",
        discussion: """
            Opens one pseudo-terminal per port (gps: NMEA 0183; ant: ANT serial messages with ANT+ pages; \
            watch: the watch-link protocol) and prints their paths, waits, then streams the race at the \
            chosen speed. With --out, writes the three byte streams to files instead. The same scenario \
            and seed always give the same bytes.
            """)

    @Argument(help: "A built-in scenario name or a scenario JSON file.") var scenario: String
    @Option(help: "Seed of the simulated athlete and sensors.") var seed: UInt64 = 1
    @Option(help: "Race seconds per wall second (0: as fast as possible).") var speed: Double = 1
    @Option(help: "Write gps.nmea, ant.bin and watch.wl into this folder instead of pseudo-terminals.")
    var out: String?
    @Option(help: "Seconds to wait after printing the pseudo-terminal paths.") var wait: Double = 2

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
        var terminals: [WirePort: PseudoTerminal] = [:]
        for port in WirePort.allCases {
            terminals[port] = try PseudoTerminal()
            FileHandle.standardOutput.write(Data("\(port.rawValue) \(terminals[port]?.path ?? "")\n".utf8))
        }
        Thread.sleep(forTimeInterval: wait)
        for (port, bytes) in emitter.preamble() where !bytes.isEmpty { try terminals[port]?.write(bytes) }
        let wallStart = Date()
        while let second = simulator.next() {
            for (port, bytes) in emitter.encode(second) where !bytes.isEmpty { try terminals[port]?.write(bytes) }
            if speed > 0 {
                let due = wallStart.addingTimeInterval(Double(second.offset + 1) / speed)
                let pause = due.timeIntervalSinceNow
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            }
        }
    }
}
