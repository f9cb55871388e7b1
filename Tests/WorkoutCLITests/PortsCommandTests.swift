import Foundation
import Testing
import WorkoutSensors

@testable import WorkoutCLI

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

    /// A port as libserialport would list it (decoded from the JSON `workout ports --json` prints).
    private func port(_ path: String, vendor: Int, product: Int, description: String) throws -> SerialPortInfo {
        let json = """
            {"path":"\(path)","description":"\(description)","transport":"usb",
             "usb":{"vendorID":\(vendor),"productID":\(product)},"links":["/dev/serial/by-id/usb-x-if00"]}
            """
        return try JSONDecoder().decode(SerialPortInfo.self, from: Data(json.utf8))
    }

    @Test func knownSticksReceiversAndBridgesAreNamedWithTheProtocolToUse() throws {
        let stick = try port("/dev/ttyUSB0", vendor: 0x0FCF, product: 0x1009, description: "ANT USB-m Stick")
        #expect(
            PortsCommand.line(stick).split(separator: "\n").map(String.init) == [
                "/dev/ttyUSB0  usb  0fcf:1009  ANT USB-m Stick", "    ANT USB-m stick: use /dev/ttyUSB0:ant",
                "    /dev/serial/by-id/usb-x-if00",
            ])
        let usb2 = try port("/dev/ttyUSB1", vendor: 0x0FCF, product: 0x1008, description: "ANT USB Stick 2")
        #expect(PortsCommand.advice(usb2) == "ANT USB2 stick: use /dev/ttyUSB1:ant")
        let ublox = try port("/dev/ttyACM0", vendor: 0x1546, product: 0x01A7, description: "u-blox 7 - GPS/GNSS Receiver")
        #expect(PortsCommand.advice(ublox)?.hasPrefix("u-blox GPS receiver: use /dev/ttyACM0:nmea") == true)
        for (vendor, product) in [(0x067B, 0x2303), (0x10C4, 0xEA60), (0x0403, 0x6001)] {
            let bridge = try port("/dev/ttyUSB2", vendor: vendor, product: product, description: "bridge")
            let advice = try #require(PortsCommand.advice(bridge))
            #expect(advice.contains("USB-serial bridge (GPS receivers often at 4800/9600)"), "\(advice)")
            #expect(advice.contains("/dev/ttyUSB2:nmea"), "\(advice)")
        }
        let unknown = try port("/dev/ttyACM1", vendor: 0x2341, product: 0x0043, description: "Arduino Uno")
        #expect(PortsCommand.advice(unknown) == nil)
        #expect(PortsCommand.line(unknown).split(separator: "\n").count == 2)
        // --json carries the same advice as `known`.
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(PortsCommand.ListedPort(stick)))
        let object = try #require(encoded as? [String: Any])
        #expect(object["known"] as? String == "ANT USB-m stick: use /dev/ttyUSB0:ant")
        #expect(object["path"] as? String == "/dev/ttyUSB0")
    }

    @Test func aPathWithAProtocolIsCheckedWithThatProtocolsSettings() throws {
        let terminal = try PseudoTerminal()
        let (status, output) = try runWorkout(["ports", "\(terminal.path):nmea@4800", "\(terminal.path):ant"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("\(terminal.path): pseudo-terminal, opens with termios at 4800,8N1"), "\(output)")
        #expect(output.contains("\(terminal.path): pseudo-terminal, opens with termios at 115200,8N1"), "\(output)")
        #expect(PortsCommand.sensor("/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0") == nil)
        #expect(PortsCommand.sensor("/dev/ttyUSB0:ant")?.settings.acceptsFixedSpeed == true)
    }
}
