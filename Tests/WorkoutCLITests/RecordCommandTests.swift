import Foundation
import Testing
import WorkoutModel
import WorkoutSensors

@Suite("workout record: bad input")
struct RecordCommandTests {
    /// A store holding two workouts, and the command's result against it.
    private func refused(_ arguments: [String]) throws -> (CommandResult, before: String, after: String) {
        var outcome: (CommandResult, String, String)?
        try withTwoRides { db, _ in
            let before = try runCommand(["list", "--db", db, "--json"]).stdout
            let result = try runCommand(arguments + ["--db", db])
            let after = try runCommand(["list", "--db", db, "--json"]).stdout
            outcome = (result, before, after)
        }
        let (result, before, after) = try #require(outcome)
        return (result, before, after)
    }

    @Test func aMissingDeviceIsNamedAndNothingRecordedIsTouched() throws {
        let missing = "/dev/ttyUSB-not-there-\(getpid())"
        let (result, before, after) = try refused(["record", "--sensor", "\(missing):ant", "--activity", "cycling"])
        #expect(result.status != 0)
        #expect(result.stderr.contains(missing), "\(result.stderr)")
        #expect(result.stderr.contains("no device at"), "\(result.stderr)")
        #expect(after == before)
        #expect(!after.isEmpty)
    }

    @Test func aBusyDeviceIsNamed() throws {
        let terminal = try PseudoTerminal()
        // Another program holds the port (an exclusive open, as a second recorder would).
        let holder = try SerialPorts.open(terminal.path, settings: .standard)
        defer { holder.close() }
        let (result, before, after) = try refused(["record", "--sensor", "\(terminal.path):nmea", "--activity", "running"])
        #expect(result.status != 0)
        #expect(result.stderr.contains(terminal.path), "\(result.stderr)")
        #expect(result.stderr.lowercased().contains("busy") || result.stderr.contains("in use"), "\(result.stderr)")
        #expect(after == before)
    }

    @Test func anUnknownProtocolIsNamedWithTheDevice() throws {
        let (result, before, after) = try refused([
            "record", "--sensor", "/dev/ttyACM0:garmin", "--activity", "running",
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains("/dev/ttyACM0"), "\(result.stderr)")
        #expect(result.stderr.contains("unknown protocol 'garmin'"), "\(result.stderr)")
        #expect(result.stderr.contains("nmea, ant, watch"), "\(result.stderr)")
        #expect(after == before)
    }

    @Test func aSecondPortThatFailsClosesTheFirstAndLeavesNoJournal() throws {
        let terminal = try PseudoTerminal()
        let missing = "/dev/ttyACM-not-there-\(getpid())"
        try withTwoRides { db, _ in
            let result = try runCommand([
                "record", "--sensor", "\(terminal.path):nmea", "--sensor", "\(missing):ant", "--activity", "running",
                "--db", db,
            ])
            #expect(result.status != 0)
            #expect(result.stderr.contains(missing))
            // The first port was released: it opens again.
            let again = try SerialPorts.open(terminal.path, settings: .standard)
            again.close()
            // No recording was left behind: a list still shows the two rides only.
            #expect(try runCommand(["list", "--db", db]).lines.count == 2)
        }
    }
}
