import Foundation
import Synchronization
import Testing

@testable import WorkoutSensors
import SensorTestSupport
import WorkoutTestSupport

@Suite("Remembered serial speeds")
struct SerialSpeedMemoryTests {
    @Test func theNewestSpeedOfEachDeviceIsKeptUpToTheCapacity() throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let memory = SerialSpeedMemory(file: folder.appendingPathComponent("a/b/serial-speeds.json").path)
        #expect(memory.speed(for: "/dev/ttyUSB0") == nil)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try memory.remember(4800, for: "/dev/ttyUSB0", at: start)
        try memory.remember(9600, for: "/dev/ttyACM0", at: start.addingTimeInterval(1))
        try memory.remember(38400, for: "/dev/ttyUSB0", at: start.addingTimeInterval(2))
        #expect(memory.speed(for: "/dev/ttyUSB0") == 38400)
        #expect(memory.speed(for: "/dev/ttyACM0") == 9600)
        for index in 0..<SerialSpeedMemory.capacity {
            try memory.remember(115_200, for: "/dev/pts/\(index)", at: start.addingTimeInterval(Double(10 + index)))
        }
        // The oldest devices went; the newest stay.
        #expect(memory.speed(for: "/dev/ttyUSB0") == nil)
        #expect(memory.speed(for: "/dev/ttyACM0") == nil)
        #expect(memory.speed(for: "/dev/pts/\(SerialSpeedMemory.capacity - 1)") == 115_200)
    }

    @Test func aDeviceIsRememberedByItsByIDLink() throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let terminal = try PseudoTerminal()
        let byID = folder.appendingPathComponent("by-id")
        try FileManager.default.createDirectory(at: byID, withIntermediateDirectories: true)
        let link = byID.appendingPathComponent("usb-u-blox_AG_GNSS_receiver-if00").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: terminal.path)
        #expect(SerialSpeedMemory.deviceName(for: terminal.path, byIDFolder: byID.path) == link)
        #expect(SerialSpeedMemory.deviceName(for: link, byIDFolder: byID.path) == link)
        let other = try PseudoTerminal()
        #expect(SerialSpeedMemory.deviceName(for: other.path, byIDFolder: byID.path) == other.path)
    }

    @Test func theDefaultFileIsUnderTheStateFolder() {
        #expect(
            SerialSpeedMemory.defaultFile(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/a"])
                == "/x/state/workout-engine/serial-speeds.json")
        #expect(
            SerialSpeedMemory.defaultFile(environment: ["HOME": "/home/a"])
                == "/home/a/.local/state/workout-engine/serial-speeds.json")
        #expect(
            SerialSpeedMemory.defaultFile(environment: ["XDG_STATE_HOME": "relative", "HOME": "/home/a"])
                == "/home/a/.local/state/workout-engine/serial-speeds.json")
    }
}
