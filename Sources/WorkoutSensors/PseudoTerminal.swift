import CTerminalShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What went wrong with a serial device or pseudo-terminal.
///
/// Every case about a device names its path, and the message says what to do.
public enum SensorError: Error, Sendable, Equatable, CustomStringConvertible {
    case pseudoTerminal(String)
    case write(path: String, detail: String)
    /// Nothing at the path (ENOENT), or no device behind it (ENXIO, ENODEV): unplugged or mistyped.
    case deviceMissing(path: String, detail: String)
    /// Another program has the device open exclusively (EBUSY, TIOCEXCL, or its lock).
    case deviceBusy(path: String, detail: String)
    /// The device exists but this user may not open it (EACCES, EPERM); `group` owns it.
    case permissionDenied(path: String, group: String?)
    /// The path is not a terminal device (a file, a directory, /dev/null …).
    case notASerialDevice(path: String, detail: String)
    /// The device refused (or did not keep) one of the line settings; `detail` says why and what to
    /// try instead (never the refused value).
    case unsupportedSetting(path: String, setting: String, detail: String)
    /// A settings string (`115200,8N1,flow=rtscts`) that does not parse.
    case invalidSettings(spec: String, detail: String)
    /// Opening failed for another reason.
    case open(path: String, detail: String)
    /// Reading failed with an error that is not a disconnect.
    case read(path: String, detail: String)
    /// The transport was already closed.
    case closed(path: String)
    /// Listing the serial ports failed.
    case listPorts(detail: String)

    public var description: String {
        switch self {
        case .pseudoTerminal(let detail): "cannot create a pseudo-terminal: \(detail)"
        case .write(let path, let detail): "cannot write to \(path): \(detail)"
        case .deviceMissing(let path, let detail):
            "no device at \(path) (\(detail)): check that it is plugged in and the path is right "
                + "(`workout ports` lists serial ports; /dev/serial/by-id/ has names that survive a replug)"
        case .deviceBusy(let path, let detail):
            "\(path) is in use by another program (\(detail)): close that program and try again "
                + "(`fuser -v \(path)` shows it; ModemManager sometimes grabs new USB serial devices)"
        case .permissionDenied(let path, let group):
            "no permission to open \(path): add your user to the group '\(group ?? "dialout")' that owns it "
                + "(`sudo usermod -aG \(group ?? "dialout") $USER`, then log in again)"
        case .notASerialDevice(let path, let detail):
            "\(path) is not a serial device (\(detail)): give the path of a serial port "
                + "(`workout ports` lists them) or of a pseudo-terminal (/dev/pts/N)"
        case .unsupportedSetting(let path, let setting, let detail):
            // The detail says what to try instead: never the value that was just refused.
            "\(path) does not support \(setting): \(detail)"
        case .invalidSettings(let spec, let detail):
            "invalid serial settings '\(spec)': \(detail); write them like 115200,8N1 or 9600,7E2,flow=rtscts"
        case .open(let path, let detail): "cannot open \(path): \(detail)"
        case .read(let path, let detail): "cannot read from \(path): \(detail)"
        case .closed(let path): "\(path) is already closed: open it again"
        case .listPorts(let detail): "cannot list the serial ports: \(detail) (is /sys mounted?)"
        }
    }
}

/// A pseudo-terminal pair in raw mode: bytes written to the master come out of the slave path
/// unchanged (no echo, no CR/LF translation), as from a serial device. Used by the simulator to
/// play sensors, and by tests to drive the serial path end to end.
public final class PseudoTerminal: Sendable {
    /// The path a reader opens (`/dev/pts/N`).
    public let path: String
    private let master: Int32
    /// Kept open so the slave's raw settings persist and writes never fail before a reader connects.
    private let slave: Int32

    public init() throws(SensorError) {
        var name = [CChar](repeating: 0, count: 128)
        let master = workout_open_pty_master(&name, name.count)
        guard master >= 0 else { throw .pseudoTerminal(String(cString: strerror(errno))) }
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else {
            close(master)
            throw .pseudoTerminal("\(path): \(String(cString: strerror(errno)))")
        }
        // Non-blocking master: a write never hangs on a reader that is not there (see `WhenFull`).
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
        guard workout_make_raw(slave) == 0 else {
            let detail = String(cString: strerror(errno))
            close(slave)
            close(master)
            throw .pseudoTerminal("\(path): cannot set raw mode: \(detail)")
        }
        self.master = master
        self.slave = slave
        self.path = path
    }

    deinit {
        close(slave)
        close(master)
    }

    /// Reads what the reader wrote to the slave side (up to `maxCount` bytes), waiting up to
    /// `timeout` for the first byte; empty when nothing came.
    public func read(upTo maxCount: Int = 4096, timeout: Duration) throws(SensorError) -> [UInt8] {
        let (revents, pollError) = waitFor(master, events: Int16(POLLIN), timeout: timeout)
        if pollError != 0 { throw .read(path: path, detail: "poll: \(errorText(pollError))") }
        guard revents != 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: max(1, maxCount))
        let count = bytes.withUnsafeMutableBytes { systemRead(master, $0) }
        if count < 0 {
            let code = errno
            if code == EAGAIN || code == EINTR { return [] }
            throw .read(path: path, detail: errorText(code))
        }
        return Array(bytes.prefix(count))
    }

    /// The line settings the reader set on its side (the slave's termios): the speed a UART behind
    /// it would run at. A pseudo-terminal carries bytes whatever the speed; an emulation of a device
    /// with a speed of its own reads it here to decide what the reader would receive.
    public func readerSettings() throws(SensorError) -> SerialSettings {
        var config = workout_serial_config()
        guard workout_serial_read_config(slave, &config) == 0 else {
            throw .read(path: path, detail: "cannot read the line settings: \(errorText(errno))")
        }
        return SerialSettings(config)
    }

    /// What a write does when the reader has not kept up and the terminal's buffer is full.
    public enum WhenFull: Sendable {
        /// Wait (poll) until the reader takes the bytes: nothing is lost.
        case wait
        /// Drop what does not fit, as a serial port overruns when nobody reads it.
        case drop
    }

    /// Writes `bytes` to the master side; returns how many were dropped (always 0 with `.wait`).
    @discardableResult
    public func write(_ bytes: [UInt8], whenFull: WhenFull = .wait) throws(SensorError) -> Int {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { buffer in
                #if canImport(Glibc)
                    Glibc.write(master, buffer.baseAddress, buffer.count)
                #else
                    Darwin.write(master, buffer.baseAddress, buffer.count)
                #endif
            }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    if whenFull == .drop { return bytes.count - offset }
                    usleep(500)
                    continue
                }
                throw .write(path: path, detail: String(cString: strerror(errno)))
            }
            offset += written
        }
        return 0
    }
}
