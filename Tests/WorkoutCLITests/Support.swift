import Foundation
import Testing
import WorkoutModel
@_exported import WorkoutTestSupport

// What the command-line suites share: running the built `workout`, a store of two rides, the shared
// recordings (the rest is WorkoutTestSupport's).

/// What a run of the `workout` executable printed, with standard output and error apart.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String

    /// The non-empty lines of standard output.
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}

/// Runs the built `workout` executable with its output and error streams captured in files (no
/// pipe can fill up and block it).
func runCommand(_ arguments: [String]) throws -> CommandResult {
    let scratch = try temporaryFolder("workout-cli-out")
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outURL = scratch.appendingPathComponent("stdout")
    let errURL = scratch.appendingPathComponent("stderr")
    try Data().write(to: outURL)
    try Data().write(to: errURL)
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    let process = Process()
    process.executableURL = BuiltProducts.executable("workout")
    process.arguments = arguments
    process.standardOutput = out
    process.standardError = err
    try process.run()
    process.waitUntilExit()
    try out.close()
    try err.close()
    return CommandResult(
        status: process.terminationStatus, stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
        stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
}

/// A store in its own temporary folder holding two synthetic five-minute rides (seeds 1 and 2,
/// activities every 120 s); removed when `body` returns or throws.
func withTwoRides(_ body: (_ db: String, _ ids: [UUID]) throws -> Void) throws {
    let folder = try temporaryFolder("workout-cli")
    defer { try? FileManager.default.removeItem(at: folder) }
    let db = folder.appendingPathComponent("store.sqlite").path
    var ids: [UUID] = []
    for seed in [1, 2] {
        let result = try runCommand([
            "debug-record", "--db", db, "--seconds", "300", "--speed", "0", "--seed", "\(seed)",
        ])
        try #require(result.status == 0, "debug-record failed: \(result.stderr)")
        // A background commit's `committed N` line may still arrive after `saved` on a loaded machine.
        let saved = try #require(result.lines.last { $0.hasPrefix("saved ") }?.split(separator: " "))
        try #require(saved.count == 3 && saved[0] == "saved", "unexpected debug-record output: \(result.stdout)")
        ids.append(try #require(UUID(uuidString: String(saved[1]))))
    }
    try #require(Set(ids).count == 2)
    try body(db, ids)
}

func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
    let decoder = JSONDecoder()
    // The outputs' dates: ISO 8601 in UTC with milliseconds (docs/schemas).
    decoder.dateDecodingStrategy = .custom { decoder in
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "not ISO 8601 with milliseconds: \(text)"))
        }
        return date
    }
    return try decoder.decode(type, from: Data(text.utf8))
}

/// Runs the built `workout` executable; standard output followed by standard error, for checks
/// that do not care which stream a line went to (see `runCommand` for them apart).
func runWorkout(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let result = try runCommand(arguments)
    return (result.status, result.stdout + result.stderr)
}

/// The built `workout` executable.
func workoutExecutable() -> URL { BuiltProducts.executable("workout") }

/// `../shared/data/fit/<name>.fit` next to the repository (or under `$WORKOUT_SHARED_DATA`).
func sharedFIT(_ name: String) -> String { SharedData.fitPath(name) }
