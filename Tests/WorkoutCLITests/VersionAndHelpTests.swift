import Foundation
import Testing

@Suite("workout command")
struct VersionAndHelpTests {
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
