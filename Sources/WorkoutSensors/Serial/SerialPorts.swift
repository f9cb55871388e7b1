import CSerialPort
import CTerminalShims
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A serial port the system has, as libserialport lists it.
public struct SerialPortInfo: Sendable, Hashable, Codable {
    /// How the port is attached.
    public enum Transport: String, Sendable, Hashable, Codable {
        /// A built-in UART (`/dev/ttyS0`, `/dev/ttyAMA0`).
        case native
        /// A USB serial adapter or USB CDC device (`/dev/ttyUSB0`, `/dev/ttyACM0`).
        case usb
        /// A Bluetooth serial port (`/dev/rfcomm0`).
        case bluetooth
    }

    /// The USB device behind a USB port.
    public struct USBDevice: Sendable, Hashable, Codable {
        /// The vendor id (0x0fcf: Dynastream ANT sticks; 0x0403: FTDI; 0x067b: Prolific …).
        public var vendorID: Int
        /// The product id.
        public var productID: Int
        /// The USB bus number, when known.
        public var bus: Int?
        /// The device's address on the bus, when known.
        public var address: Int?
        /// The manufacturer string, when the device has one.
        public var manufacturer: String?
        /// The product string, when the device has one.
        public var product: String?
        /// The serial number string, when the device has one.
        public var serialNumber: String?

        /// `vvvv:pppp` in lowercase hexadecimal, as `lsusb` prints it.
        public var id: String { "\(hex4(vendorID)):\(hex4(productID))" }
    }

    /// The device path (`/dev/ttyUSB0`).
    public var path: String
    /// libserialport's description: the USB product string, else the device name.
    public var portDescription: String
    /// How the port is attached.
    public var transport: Transport
    /// The USB device, for a USB port whose details could be read.
    public var usb: USBDevice?
    /// The Bluetooth address, for a Bluetooth port.
    public var bluetoothAddress: String?
    /// Stable links to the port under /dev/serial/by-id and /dev/serial/by-path (they keep their
    /// name when the device is replugged, where /dev/ttyUSB0 may become /dev/ttyUSB1).
    public var links: [String]

    private enum CodingKeys: String, CodingKey {
        case path, portDescription = "description", transport, usb, bluetoothAddress, links
    }
}

/// Finding, classifying and opening serial devices.
public enum SerialPorts {
    /// The serial ports libserialport finds (from /sys/class/tty; virtual terminals and
    /// pseudo-terminals are not listed), sorted by path, with their stable /dev/serial links.
    public static func list() throws(SensorError) -> [SerialPortInfo] {
        var found: UnsafeMutablePointer<OpaquePointer?>?
        guard sp_list_ports(&found) == SP_OK, let list = found else {
            throw .listPorts(detail: errorText(sp_last_error_code()))
        }
        defer { sp_free_port_list(list) }
        let links = stableLinks()
        var ports: [SerialPortInfo] = []
        var index = 0
        while let port = list[index] {
            index += 1
            guard let name = sp_get_port_name(port).map({ String(cString: $0) }) else { continue }
            var info = SerialPortInfo(
                path: name, portDescription: sp_get_port_description(port).map { String(cString: $0) } ?? name,
                transport: .native, usb: nil, bluetoothAddress: nil, links: links[name] ?? [])
            switch sp_get_port_transport(port) {
            case SP_TRANSPORT_USB:
                info.transport = .usb
                var vendor: Int32 = 0
                var product: Int32 = 0
                if sp_get_port_usb_vid_pid(port, &vendor, &product) == SP_OK {
                    var bus: Int32 = 0
                    var address: Int32 = 0
                    let located = sp_get_port_usb_bus_address(port, &bus, &address) == SP_OK
                    info.usb = SerialPortInfo.USBDevice(
                        vendorID: Int(vendor), productID: Int(product), bus: located ? Int(bus) : nil,
                        address: located ? Int(address) : nil,
                        manufacturer: sp_get_port_usb_manufacturer(port).map { String(cString: $0) },
                        product: sp_get_port_usb_product(port).map { String(cString: $0) },
                        serialNumber: sp_get_port_usb_serial(port).map { String(cString: $0) })
                }
            case SP_TRANSPORT_BLUETOOTH:
                info.transport = .bluetooth
                info.bluetoothAddress = sp_get_port_bluetooth_address(port).map { String(cString: $0) }
            default:
                break
            }
            ports.append(info)
        }
        return ports.sorted { $0.path < $1.path }
    }

    /// The links under /dev/serial/by-id and /dev/serial/by-path, by the device path they point at.
    private static func stableLinks() -> [String: [String]] {
        var links: [String: [String]] = [:]
        for folder in ["/dev/serial/by-id", "/dev/serial/by-path"] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in names.sorted() {
                let link = "\(folder)/\(name)"
                if let target = resolvedPath(link) { links[target, default: []].append(link) }
            }
        }
        return links
    }

    /// Unix98 pseudo-terminal slaves (`/dev/pts/N`) have majors 136–143; 3 is the legacy BSD slave.
    static let pseudoTerminalMajors: Set<UInt32> = [3, 136, 137, 138, 139, 140, 141, 142, 143]

    /// What `path` is, from stat(2) on it (symbolic links followed), without opening it.
    ///
    /// A character device with a pseudo-terminal slave's major number (136–143, or 3 for legacy BSD
    /// ptys), or whose resolved path is under /dev/pts/, is a pseudo-terminal; any other character
    /// device is taken for a serial port (opening it tells whether it really is one). Throws
    /// `deviceMissing`, `permissionDenied` or `notASerialDevice` (not a character device, or
    /// /dev/ptmx).
    public static func kind(of path: String) throws(SensorError) -> SerialDeviceKind {
        var status = stat()
        guard stat(path, &status) == 0 else { throw openError(path: path, code: errno) }
        let type = status.st_mode & S_IFMT
        guard type == S_IFCHR else {
            let what =
                switch type {
                case S_IFREG: "a regular file"
                case S_IFDIR: "a directory"
                case S_IFIFO: "a pipe"
                case S_IFSOCK: "a socket"
                case S_IFBLK: "a block device"
                default: "not a character device"
                }
            throw .notASerialDevice(path: path, detail: what)
        }
        let major = workout_device_major(UInt64(status.st_rdev))
        let minor = workout_device_minor(UInt64(status.st_rdev))
        if major == 5 && minor == 2 {
            throw .notASerialDevice(
                path: path, detail: "the pseudo-terminal multiplexer: open the /dev/pts/N of a pseudo-terminal")
        }
        if pseudoTerminalMajors.contains(major) || (resolvedPath(path) ?? path).hasPrefix("/dev/pts/") {
            return .pseudoTerminal
        }
        return .serialPort
    }

    /// Opens `path` with `settings`.
    ///
    /// With `.automatic`, a pseudo-terminal (see ``kind(of:)``) goes through termios, anything else
    /// through libserialport, and a terminal libserialport refuses for lack of modem lines falls
    /// back to termios (kind `.terminal`). Errors name the path and say what to do: `deviceMissing`,
    /// `deviceBusy`, `permissionDenied`, `notASerialDevice`, `unsupportedSetting`, `open`.
    public static func open(
        _ path: String, settings: SerialSettings = .standard, backend: SerialBackend = .automatic
    ) throws(SensorError) -> any ByteTransport {
        switch backend {
        case .libserialport:
            return try LibSerialPortTransport(path: path, settings: settings)
        case .termios:
            let kind = try kind(of: path)
            return try TermiosTransport(path: path, settings: settings, kind: kind)
        case .automatic:
            let kind = try kind(of: path)
            if kind == .pseudoTerminal {
                return try TermiosTransport(path: path, settings: settings, kind: .pseudoTerminal)
            }
            return try openSerialPort(path, settings: settings)
        }
    }

    /// Opens a device that is not a pseudo-terminal, as ``open(_:settings:backend:)`` does with
    /// `.automatic`: through libserialport, else, for a terminal libserialport refuses for lack of
    /// modem lines (TIOCMGET answers ENOTTY: Linux's usb_serial_simple, which serves ANT USB2 and
    /// USB-m sticks), through termios (kind `.terminal`).
    public static func openSerialPort(_ path: String, settings: SerialSettings) throws(SensorError) -> any ByteTransport {
        do {
            return try LibSerialPortTransport(path: path, settings: settings)
        } catch {
            guard case .notASerialDevice = error, isTerminal(path) else { throw error }
            return try TermiosTransport(path: path, settings: settings, kind: .terminal)
        }
    }

    /// Whether `path` opens as a terminal (isatty), without becoming the controlling terminal.
    static func isTerminal(_ path: String) -> Bool {
        let fd = systemOpen(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { systemClose(fd) }
        return isatty(fd) == 1
    }
}

/// Four lowercase hexadecimal digits.
private func hex4(_ value: Int) -> String {
    let digits = String(value & 0xFFFF, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
