import Foundation
import Testing
import WorkoutModel
import WorkoutSensors
import WorkoutStore
import WorkoutTestSupport

@Suite("workout record: bad input")
struct RecordBadInputTests {
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
        let (result, before, after) = try refused(["record", "--sensor", "\(missing):ant", "--activity", "cycling", "--ant-network-key", "0123456789ABCDEF"])
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
                "--db", db, "--ant-network-key", "0123456789ABCDEF",
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

    /// An ANT sensor without a network key is refused before any port is opened, saying where the key
    /// comes from; a malformed key is refused too.
    @Test func anANTSensorWithoutANetworkKeyIsRefusedBeforeOpening() throws {
        let missing = "/dev/ttyUSB-not-there-\(getpid())"
        let (result, before, after) = try refused(["record", "--sensor", "\(missing):ant", "--activity", "cycling"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("WORKOUT_ANT_NETWORK_KEY"), "\(result.stderr)")
        #expect(!result.stderr.contains("no device at"), "the key is checked before the port: \(result.stderr)")
        #expect(after == before)
        let (malformed, _, _) = try refused([
            "record", "--sensor", "\(missing):ant:hr=4711", "--activity", "cycling", "--ant-network-key", "12345",
        ])
        #expect(malformed.status != 0)
        #expect(malformed.stderr.contains("16 are needed"), "\(malformed.stderr)")
        let (badPin, _, _) = try refused([
            "record", "--sensor", "\(missing):ant:hr=x", "--activity", "cycling", "--ant-network-key", "0123456789ABCDEF",
        ])
        #expect(badPin.stderr.contains("device number"), "\(badPin.stderr)")
    }

    /// A tiny `--time-scale` (the reconnect back-off divides by it) is refused or works, never a crash: the
    /// message names the missing device or the option.
    @Test func aTinyTimeScaleIsRefusedOrWorksButNeverCrashes() throws {
        let folder = try temporaryFolder("record")
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = "/dev/ttyUSB-not-there-\(getpid())"
        let result = try runCommand([
            "record", "--sensor", "\(missing):ant", "--activity", "cycling", "--time-scale", "1e-17",
            "--ant-network-key", "0123456789ABCDEF",
            "--db", folder.appendingPathComponent("store.sqlite").path,
        ])
        #expect(result.status == 1 || result.status == 64, "status \(result.status)")
        #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")
        #expect(result.stderr.contains(missing) || result.stderr.contains("--time-scale"), "\(result.stderr)")
    }
}
