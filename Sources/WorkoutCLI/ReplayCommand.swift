import ArgumentParser
import Foundation
import WorkoutEngine
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore

/// `workout replay <scenario>`: a simulated race through the live engine into the store.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Replay a simulated race through the live engine and save it.",
        discussion: """
            Runs a scenario (a built-in name or a scenario JSON file) through the same path as a \
            recording: session, builder, journal, store, on a virtual clock. Prints a per-activity \
            summary and writes the simulator's ground truth next to the store. The saved workout is \
            the same at every speed. Built-in scenarios: \(Scenario.builtInNames.joined(separator: ", ")).
            """)

    @Argument(help: "A built-in scenario name or a scenario JSON file.") var scenario: String
    @Option(help: "Seed of the simulated athlete and sensors.") var seed: UInt64 = 1
    @Option(
        help: ArgumentHelp("Race seconds per wall second: 1x, 60x, 1000x … or max (virtual time).", valueName: "speed"),
        transform: { text in
            guard let speed = ReplaySpeed(text) else {
                throw ValidationError("--speed takes 1x, 60x, 1000x (any positive multiple) or max, not '\(text)'")
            }
            return speed
        })
    var speed: ReplaySpeed = .max
    @Option(
        help: ArgumentHelp(
            "How a multisport race changes legs: buttons (the watch's NEXT button) or automatic (detected).",
            valueName: "mode"),
        transform: { text in
            guard let mode = ReplayOptions.LegChanges(rawValue: text) else {
                throw ValidationError("--legs takes buttons or automatic, not '\(text)'")
            }
            return mode
        })
    var legs: ReplayOptions.LegChanges = .buttons
    @Flag(help: "Auto-pause when the athlete stops (cycling < 1 m/s, running < 0.5 m/s, for 3 s).")
    var autoPause = false
    @OptionGroup var store: StoreOptions
    @Option(help: ArgumentHelp("Where to write the ground truth JSON (default: next to the store).", valueName: "path"))
    var truth: String?
    @OptionGroup var output: OutputOptions

    func run() throws {
        let scenario: Scenario
        do {
            scenario = try Scenario.load(self.scenario)
        } catch {
            throw UserFacingError(error)
        }
        let database = try store.open()
        let total = Self.raceSeconds(scenario, seed: seed)
        let showProgress = isatty(STDERR_FILENO) == 1 && !output.json
        let result = try userFacing { () throws(StoreError) in
            let options = ReplayOptions(speed: speed, legChanges: legs, autoPause: autoPause ? .standard : nil)
            return try RaceReplay.run(scenario, seed: seed, into: database, options: options) { progress in
                guard showProgress else { return }
                Self.drawProgress(progress, total: total)
            }
        }
        if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        let truthPath =
            truth
            ?? ((database.path as NSString).deletingLastPathComponent as NSString)
            .appendingPathComponent("ground-truth/\(result.workout.id).json")
        try writeTruth(result.truth, to: truthPath)
        if output.json {
            emitLine(try Format.json(result.workout))
        } else {
            emitLine(Format.workoutDetail(result.workout).joined(separator: "\n"))
            emitLine("")
            emitLine("saved \(result.workout.id) to \(database.path)")
            emitLine("ground truth: \(truthPath)")
        }
    }

    private func writeTruth(_ truth: GroundTruth, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        do {
            // Private as the store is: the folder 0700 when created here, the file 0600.
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            let data = try encoder.encode(truth)
            if !FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) {
                try data.write(to: URL(fileURLWithPath: path))
            }
        } catch {
            throw UserFacingError("cannot write the ground truth to \(path): \(error.localizedDescription)")
        }
    }

    /// Race seconds of a scenario (a dry run of the simulator, which is cheap).
    static func raceSeconds(_ scenario: Scenario, seed: UInt64) -> Int {
        var simulator = WatchSimulator(scenario: scenario, seed: seed)
        var count = 0
        while let second = simulator.next(), second.leg != nil { count += 1 }
        return count
    }

    static func drawProgress(_ progress: ReplayProgress, total: Int) {
        let width = 30
        let done = total > 0 ? min(width, progress.raceSeconds * width / total) : 0
        let bar = String(repeating: "=", count: done) + String(repeating: " ", count: width - done)
        let leg = progress.leg.map { "leg \(progress.legNumber ?? 0) \($0.rawValue)" } ?? ""
        FileHandle.standardError.write(
            Data(
                Format.progressLine(
                    "[\(bar)] \(Format.duration(Double(progress.raceSeconds))) / \(Format.duration(Double(total)))  \(leg)"
                ).utf8))
    }
}
