import Foundation
import Testing

/// Runs the built `workout` executable, which sits next to the test bundle in the build folder.
func runWorkout(_ arguments: [String]) throws -> (status: Int32, output: String) {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("workout").path),
        directory.pathComponents.count > 1
    {
        directory.deleteLastPathComponent()
    }
    let process = Process()
    process.executableURL = directory.appendingPathComponent("workout")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite("workout command")
struct CLITests {
    @Test func versionPrintsASemanticVersion() throws {
        let (status, output) = try runWorkout(["--version"])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
    }

    @Test func helpDescribesTheTool() throws {
        let (status, output) = try runWorkout(["--help"])
        #expect(status == 0)
        #expect(output.contains("USAGE: workout"))
    }

    @Test func unknownOptionFailsWithAMessage() throws {
        let (status, output) = try runWorkout(["--no-such-option"])
        #expect(status != 0)
        #expect(output.contains("no-such-option"))
    }
}
