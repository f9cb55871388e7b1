import ArgumentParser
import Foundation
import WorkoutSensors

/// `workout ports`: the serial ports found, or what given device paths are and whether they open.
struct PortsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ports", abstract: "List serial ports, or check that device paths open.",
        discussion: """
            Without paths: one line per serial port libserialport finds (path, transport, USB \
            vendor:product id, description, manufacturer and serial number, stable /dev/serial \
            links), and for a known stick, receiver or bridge what it is and how to record it \
            ("ANT USB-m stick: use /dev/ttyUSB0:ant"). Pseudo-terminals (watch-sim's, a BLE \
            bridge's) are not listed: give their path.

            With paths: opens each one as `workout record` will, with --settings (or, given as \
            PATH:PROTOCOL[@SETTINGS] like a --sensor of `record`, with that protocol's settings: \
            /dev/ttyUSB0:ant opens an ANT stick whose driver keeps its own speed), and prints what \
            it is (serial port through libserialport, pseudo-terminal through termios) and the \
            settings the driver kept, or why it cannot be opened (missing, busy, no permission, \
            not a serial device, unsupported setting); the exit status is 1 if any failed. The \
            device is closed again at once.

            Settings: BAUD,FRAME,flow=FLOW in any order, each optional: 115200 (bit/s), 8N1 (data \
            bits 5-8, parity N/O/E/M/S, stop bits 1-2), flow=none|xonxoff|rtscts|dtrdsr. Default \
            115200,8N1.
            """)

    @Argument(
        help: ArgumentHelp(
            "Device paths to check (symbolic links are followed), or PATH:PROTOCOL[@SETTINGS] as for record.",
            valueName: "path"))
    var paths: [String] = []
    @Option(help: ArgumentHelp("Line settings for the check, e.g. 4800 or 9600,7E1,flow=rtscts.", valueName: "spec"))
    var settings = "115200,8N1"
    @OptionGroup var output: OutputOptions

    func validate() throws {
        do {
            _ = try SerialSettings(parsing: settings)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// One checked path, for --json.
    struct Check: Encodable {
        var path: String
        var ok: Bool
        var kind: SerialDeviceKind?
        var backend: SerialBackend?
        var settings: String?
        var error: String?
    }

    func run() throws {
        if paths.isEmpty {
            try list()
        } else {
            try check()
        }
    }

    private func list() throws {
        let ports: [SerialPortInfo]
        do {
            ports = try SerialPorts.list()
        } catch {
            throw UserFacingError(error)
        }
        if output.json {
            emitLine(try Format.json(ports.map(ListedPort.init)))
        } else if ports.isEmpty {
            FileHandle.standardError.write(
                Data(
                    ("no serial ports found (pseudo-terminals are not listed: give their path, "
                        + "e.g. `workout ports /dev/pts/3`)\n").utf8))
        } else {
            emitLine(ports.map(PortsCommand.line).joined(separator: "\n"))
        }
    }

    /// The sensor an argument names as `record` would (PATH:PROTOCOL[@SETTINGS], a known protocol after
    /// the last colon); nil for a plain path (by-path links contain colons too).
    static func sensor(_ argument: String) -> SensorRecorder.Sensor? {
        guard let colon = argument.lastIndex(of: ":") else { return nil }
        let wire = argument[argument.index(after: colon)...].split(separator: "@", maxSplits: 1).first ?? ""
        guard SensorProtocol(rawValue: wire.lowercased()) != nil else { return nil }
        return try? RecordCommand.parseSensors([argument]).first
    }

    /// A listed port for --json: the port's fields, and `known` (what it is and how to record it)
    /// for a known device.
    struct ListedPort: Encodable {
        var port: SerialPortInfo
        var known: String?

        init(_ port: SerialPortInfo) {
            self.port = port
            known = PortsCommand.advice(port)
        }

        private enum Key: String, CodingKey { case known }

        func encode(to encoder: any Encoder) throws {
            try port.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encodeIfPresent(known, forKey: .known)
        }
    }

    /// What a known USB device is and how to record it (KnownSerialDevice.all), if it is known.
    static func advice(_ port: SerialPortInfo) -> String? {
        guard let usb = port.usb, let known = KnownSerialDevice.matching(vendor: usb.vendorID, product: usb.productID)
        else { return nil }
        return known.advice(path: port.path)
    }

    /// A port's text line, what it is when known, and its stable links on following lines.
    static func line(_ port: SerialPortInfo) -> String {
        var fields = [port.path, port.transport.rawValue]
        if let usb = port.usb { fields.append(usb.id) }
        fields.append(port.portDescription)
        var extras: [String] = []
        if let manufacturer = port.usb?.manufacturer { extras.append(manufacturer) }
        if let serial = port.usb?.serialNumber { extras.append("serial \(serial)") }
        if let address = port.bluetoothAddress { extras.append(address) }
        if !extras.isEmpty { fields.append("(" + extras.joined(separator: ", ") + ")") }
        let known = advice(port).map { ["    \($0)"] } ?? []
        return ([fields.joined(separator: "  ")] + known + port.links.map { "    \($0)" }).joined(separator: "\n")
    }

    private func check() throws {
        var checks: [Check] = []
        for argument in paths {
            var path = argument
            do {
                var spec = try SerialSettings(parsing: settings)
                if let sensor = Self.sensor(argument) {
                    path = sensor.path
                    spec = sensor.settings
                }
                let transport = try SerialPorts.open(path, settings: spec)
                defer { transport.close() }
                let kept = try transport.currentSettings()
                checks.append(
                    Check(
                        path: path, ok: true, kind: transport.kind, backend: transport.backend,
                        settings: kept.description))
            } catch {
                checks.append(Check(path: path, ok: false, error: error.description))
            }
        }
        if output.json {
            emitLine(try Format.json(checks))
        } else {
            let lines = checks.map { check in
                guard check.ok, let kind = check.kind, let backend = check.backend, let kept = check.settings else {
                    return check.error ?? "\(check.path): failed"
                }
                let what =
                    switch kind {
                    case .serialPort: "serial port"
                    case .pseudoTerminal: "pseudo-terminal"
                    case .terminal: "terminal without modem lines"
                    }
                return "\(check.path): \(what), opens with \(backend.rawValue) at \(kept)"
            }
            emitLine(lines.joined(separator: "\n"))
        }
        if checks.contains(where: { !$0.ok }) { throw ExitCode.failure }
    }
}
