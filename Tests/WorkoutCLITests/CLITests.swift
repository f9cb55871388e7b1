import Foundation
import Testing

/// Runs the built `workout` executable; standard output followed by standard error, for checks
/// that do not care which stream a line went to (see `runCommand` for them apart).
func runWorkout(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let result = try runCommand(arguments)
    return (result.status, result.stdout + result.stderr)
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
