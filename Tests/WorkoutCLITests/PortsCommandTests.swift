import Foundation
import Testing
import WorkoutSensors

@Suite("workout ports")
struct PortsCommandTests {
    @Test func listsPortsAsJSON() throws {
        let (status, output) = try runWorkout(["ports", "--json"])
        #expect(status == 0)
        let ports = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]]
        let listed = try #require(ports, "not a JSON array: \(output)")
        for port in listed {
            #expect((port["path"] as? String)?.hasPrefix("/dev/") == true)
            #expect(["native", "usb", "bluetooth"].contains(port["transport"] as? String))
            #expect(port["description"] is String)
        }
    }

    @Test func checksAPseudoTerminalAndAMissingDevice() throws {
        let terminal = try PseudoTerminal()
        let missing = "/dev/ttyUSB-not-there-\(getpid())"
        let (status, output) = try runWorkout(["ports", terminal.path, missing, "--settings", "4800"])
        #expect(status != 0)
        #expect(output.contains("\(terminal.path): pseudo-terminal, opens with termios at 4800,8N1"))
        #expect(output.contains("no device at \(missing)"))

        let (okStatus, json) = try runWorkout(["ports", terminal.path, "--json"])
        #expect(okStatus == 0)
        let checks = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]
        let check = try #require(checks?.first, "not a JSON array: \(json)")
        #expect(check["kind"] as? String == "pseudoTerminal")
        #expect(check["backend"] as? String == "termios")
        #expect(check["settings"] as? String == "115200,8N1")
        #expect(check["ok"] as? Bool == true)
    }

    @Test func badSettingsAreRefusedBeforeOpeningAnything() throws {
        let (status, output) = try runWorkout(["ports", "/dev/null", "--settings", "9N1"])
        #expect(status != 0)
        #expect(output.contains("invalid serial settings '9N1'"))
    }
}
