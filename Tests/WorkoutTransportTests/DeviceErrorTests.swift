import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutSensors

#if canImport(Glibc)
    import Glibc
#endif

@Suite("device errors")
struct DeviceErrorTests {
    @Test func aMissingDeviceNamesThePath() throws {
        let path = "/dev/ttyUSB-not-there-\(getpid())"
        for backend in [SerialBackend.automatic, .libserialport, .termios] {
            #expect {
                try SerialPorts.open(path, backend: backend)
            } throws: { error in
                isSensorError(error, naming: path) {
                    if case .deviceMissing = $0 { return $0.description.contains("plugged in") }
                    return false
                }
            }
        }
    }

    @Test func aDanglingLinkIsAMissingDevice() throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let link = folder.appendingPathComponent("ant").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/pts/999999")
        #expect {
            try SerialPorts.open(link)
        } throws: { error in
            isSensorError(error, naming: link) {
                if case .deviceMissing = $0 { return true }
                return false
            }
        }
    }

    @Test func filesAndNonTerminalDevicesAreNotSerialDevices() throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("capture.nmea").path
        try Data("$GPGGA".utf8).write(to: URL(fileURLWithPath: file))
        let cases: [(String, String)] = [
            (file, "a regular file"), (folder.path, "a directory"), ("/dev/null", "libserialport knows no serial port"),
            ("/dev/ptmx", "pseudo-terminal multiplexer"),
        ]
        for (path, detail) in cases {
            #expect {
                try SerialPorts.open(path)
            } throws: { error in
                isSensorError(error, naming: path) {
                    if case .notASerialDevice(_, let text) = $0 { return text.contains(detail) }
                    return false
                }
            }
        }
        #expect(throws: SensorError.self) { try SerialPorts.open("/dev/null", backend: .termios) }
    }

    @Test func errorNumbersMapToTypedErrorsThatSayWhatToDo() {
        let path = "/dev/ttyUSB7"
        #expect(
            openError(path: path, code: ENOENT)
                == .deviceMissing(path: path, detail: "No such file or directory, ENOENT"))
        guard case .permissionDenied(path, _) = openError(path: path, code: EACCES) else {
            Issue.record("EACCES is not a permission error")
            return
        }
        #expect(openError(path: path, code: EACCES).description.contains("usermod -aG"))
        #expect(openError(path: path, code: EACCES).description.contains(path))
        guard case .deviceBusy(path, _) = openError(path: path, code: EBUSY) else {
            Issue.record("EBUSY is not a busy device")
            return
        }
        guard case .notASerialDevice(path, _) = openError(path: path, code: ENOTTY) else {
            Issue.record("ENOTTY is not 'not a serial device'")
            return
        }
        guard case .deviceMissing(path, _) = openError(path: path, code: ENXIO) else {
            Issue.record("ENXIO is not a missing device")
            return
        }
    }

    @Test(.enabled(if: getuid() != 0, "root opens any file whatever its mode"))
    func noPermissionIsReportedWithTheGroupToJoin() throws {
        let terminal = try PseudoTerminal()
        #expect(chmod(terminal.path, 0) == 0)
        #expect {
            try SerialPorts.open(terminal.path)
        } throws: { error in
            isSensorError(error, naming: terminal.path) {
                if case .permissionDenied = $0 { return true }
                return false
            }
        }
    }

    @Test func listingPortsWorksOnAnyMachine() throws {
        let ports = try SerialPorts.list()
        #expect(ports.map(\.path) == ports.map(\.path).sorted())
        for port in ports {
            #expect(port.path.hasPrefix("/dev/"))
            #expect(!port.portDescription.isEmpty)
            #expect(try SerialPorts.kind(of: port.path) == .serialPort)
        }
    }
}
