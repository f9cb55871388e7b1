import CTerminalShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An open byte stream from a serial device: a serial port (through libserialport) or a terminal
/// without modem lines such as a pseudo-terminal (through termios).
///
/// Reads wait at most their timeout. A transport may be used from several threads; `close` waits
/// for a read or write in progress to return (at most its timeout), then every later call throws
/// `SensorError.closed`.
public protocol ByteTransport: AnyObject, Sendable {
    /// The path it was opened with (a symbolic link stays as given).
    var path: String { get }
    /// What the path turned out to be.
    var kind: SerialDeviceKind { get }
    /// Which code path carries the bytes.
    var backend: SerialBackend { get }

    /// Reads what is available into `buffer`, waiting up to `timeout` for the first byte.
    ///
    /// Returns `.bytes(n)` (n ≥ 1), `.timeout` when nothing arrived, or `.endOfStream(reason)`
    /// when the device is gone: unplugged, the other end of a pseudo-terminal closed (a hang-up),
    /// or an I/O error (EIO, ENXIO, ENODEV). Other failures throw `SensorError.read`.
    func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(SensorError) -> ReadOutcome

    /// Writes all of `bytes`, waiting up to `timeout` for the device to take them; throws
    /// `SensorError.write` when it does not.
    func write(_ bytes: [UInt8], timeout: Duration) throws(SensorError)

    /// The line settings the device holds now (read back from the driver).
    func currentSettings() throws(SensorError) -> SerialSettings

    /// Releases the device (its lock and exclusive mode too). Calling it again does nothing.
    func close()
}

/// What one read returned.
public enum ReadOutcome: Sendable, Equatable {
    /// This many bytes (at least one) were stored at the start of the buffer.
    case bytes(Int)
    /// Nothing arrived within the timeout.
    case timeout
    /// The device is gone; the transport should be closed (and reopened later).
    case endOfStream(DisconnectReason)
}

/// A read's result with the bytes in an array.
public enum ReadChunk: Sendable, Equatable {
    /// The bytes read (at least one).
    case bytes([UInt8])
    /// Nothing arrived within the timeout.
    case timeout
    /// The device is gone.
    case endOfStream(DisconnectReason)
}

/// Why a device stopped delivering bytes.
public enum DisconnectReason: Sendable, Equatable, CustomStringConvertible {
    /// The device hung up: unplugged, or the other end of the pseudo-terminal closed (end of file).
    case hangUp
    /// An input/output error that means the device went away (EIO, ENXIO, ENODEV).
    case ioError(String)
    /// A read failed with another error.
    case readFailed(SensorError)

    public var description: String {
        switch self {
        case .hangUp: "the device hung up (unplugged, or the other end closed)"
        case .ioError(let detail): "input/output error: \(detail)"
        case .readFailed(let error): error.description
        }
    }
}

/// What kind of terminal device a path is.
public enum SerialDeviceKind: String, Sendable, Hashable, Codable {
    /// A serial port with modem lines (UART, USB serial, Bluetooth RFCOMM): opened with libserialport.
    case serialPort
    /// A pseudo-terminal slave (`/dev/pts/N`): opened with termios, as libserialport refuses it.
    case pseudoTerminal
    /// Another terminal without modem lines (TIOCMGET answers ENOTTY): opened with termios.
    case terminal
}

/// Which code opens and reads a device.
public enum SerialBackend: String, Sendable, Hashable, Codable {
    /// libserialport for serial ports, termios for pseudo-terminals and terminals without modem lines.
    case automatic
    /// libserialport only (fails on a pseudo-terminal).
    case libserialport
    /// termios only (raw mode, non-blocking, poll).
    case termios
}

extension ByteTransport {
    /// Reads up to `maxCount` bytes, waiting up to `timeout` for the first one.
    public func read(upTo maxCount: Int = 4096, timeout: Duration) throws(SensorError) -> ReadChunk {
        var storage = [UInt8](repeating: 0, count: max(1, maxCount))
        let result = storage.withUnsafeMutableBytes { buffer in
            Result { () throws(SensorError) -> ReadOutcome in try read(into: buffer, timeout: timeout) }
        }
        switch try result.get() {
        case .bytes(let count): return .bytes(Array(storage.prefix(count)))
        case .timeout: return .timeout
        case .endOfStream(let reason): return .endOfStream(reason)
        }
    }
}

// MARK: - Shared POSIX helpers

/// The C library's message for an error number.
func errorText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// The symbolic name of the errors users meet with serial devices, for messages.
func errorName(_ code: Int32) -> String {
    switch code {
    case ENOENT: "ENOENT"
    case ENXIO: "ENXIO"
    case ENODEV: "ENODEV"
    case EACCES: "EACCES"
    case EPERM: "EPERM"
    case EBUSY: "EBUSY"
    case EIO: "EIO"
    case ENOTTY: "ENOTTY"
    case EINVAL: "EINVAL"
    case ENOTDIR: "ENOTDIR"
    case EAGAIN: "EAGAIN"
    default: "errno \(code)"
    }
}

/// Whether a read error means the device went away.
func isDisconnectError(_ code: Int32) -> Bool {
    code == EIO || code == ENXIO || code == ENODEV
}

/// The typed error for a failed open of `path` with error number `code`.
func openError(path: String, code: Int32) -> SensorError {
    let detail = "\(errorText(code)), \(errorName(code))"
    switch code {
    case ENOENT, ENOTDIR, ENXIO, ENODEV, EIO: return .deviceMissing(path: path, detail: detail)
    case EACCES, EPERM: return .permissionDenied(path: path, group: owningGroup(of: path))
    case EBUSY: return .deviceBusy(path: path, detail: detail)
    case ENOTTY: return .notASerialDevice(path: path, detail: "not a terminal: \(detail)")
    default: return .open(path: path, detail: detail)
    }
}

/// The name of the group that owns `path` (`dialout`, `uucp` …), if it can be read.
func owningGroup(of path: String) -> String? {
    var status = stat()
    guard stat(path, &status) == 0, let entry = getgrgid(status.st_gid), let name = entry.pointee.gr_name else {
        return nil
    }
    return String(cString: name)
}

/// Milliseconds for poll(2), rounded up, at most a day.
func pollMilliseconds(_ timeout: Duration) -> Int32 {
    let (seconds, attoseconds) = timeout.components
    if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
    if seconds >= 86_400 { return 86_400_000 }
    let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(milliseconds)
}

/// Waits until `fd` is readable (or writable with `events: POLLOUT`), or `timeout` passes.
/// Returns the revents (0 on timeout); EINTR restarts the wait with the time left.
func waitFor(_ fd: Int32, events: Int16, timeout: Duration) -> (revents: Int16, error: Int32) {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while true {
        var request = pollfd(fd: fd, events: events, revents: 0)
        let result = poll(&request, 1, pollMilliseconds(deadline - clock.now))
        if result > 0 { return (request.revents, 0) }
        if result == 0 { return (0, 0) }
        if errno != EINTR { return (0, errno) }
    }
}

/// open(2), named apart from `SerialPorts.open`.
func systemOpen(_ path: String, _ flags: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.open(path, flags)
    #else
        Darwin.open(path, flags)
    #endif
}

/// read(2), named apart from the transports' own `read` methods.
func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
    #if canImport(Glibc)
        Glibc.read(fd, buffer.baseAddress, buffer.count)
    #else
        Darwin.read(fd, buffer.baseAddress, buffer.count)
    #endif
}

/// write(2), named apart from the transports' own `write` methods.
func systemWrite(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Int {
    #if canImport(Glibc)
        Glibc.write(fd, buffer.baseAddress, buffer.count)
    #else
        Darwin.write(fd, buffer.baseAddress, buffer.count)
    #endif
}

/// close(2), named apart from the transports' own `close` methods.
func systemClose(_ fd: Int32) {
    #if canImport(Glibc)
        _ = Glibc.close(fd)
    #else
        _ = Darwin.close(fd)
    #endif
}

/// Takes the advisory lock other serial programs (pyserial's exclusive mode, our own transports)
/// take, and sets exclusive mode (TIOCEXCL), so a second opener is told the device is busy.
func lockExclusively(_ fd: Int32, path: String) throws(SensorError) {
    try takeLock(fd, path: path)
    _ = workout_set_exclusive(fd, 1)
}

/// Takes the advisory lock (`flock`, exclusive, non-blocking) on `fd`; throws `deviceBusy` when
/// another descriptor holds it.
func takeLock(_ fd: Int32, path: String) throws(SensorError) {
    if flock(fd, LOCK_EX | LOCK_NB) != 0 {
        let code = errno
        if code == EWOULDBLOCK || code == EAGAIN {
            throw .deviceBusy(path: path, detail: "another program holds its lock")
        }
    }
}

/// Undoes `lockExclusively` (the lock would go with the descriptor; exclusive mode stays on the
/// terminal while anyone else has it open, so it is cleared explicitly).
func unlockExclusively(_ fd: Int32) {
    _ = workout_set_exclusive(fd, 0)
    _ = flock(fd, LOCK_UN)
}

extension SerialSettings {
    /// The settings in the C shim's form.
    var cConfig: workout_serial_config {
        workout_serial_config(
            baud: UInt32(clamping: baudRate), data_bits: Int32(dataBits),
            parity: CChar(bitPattern: parity.letter.asciiValue ?? UInt8(ascii: "N")),
            stop_bits: Int32(stopBits),
            flow: Int32(FlowControl.allCases.firstIndex(of: flowControl) ?? 0))
    }

    /// Settings read back from a driver, whatever their values.
    init(_ config: workout_serial_config) {
        let letter = Character(Unicode.Scalar(UInt8(bitPattern: config.parity)))
        let flows = FlowControl.allCases
        self.init(
            uncheckedBaudRate: Int(config.baud), dataBits: Int(config.data_bits),
            parity: Parity.allCases.first { $0.letter == letter } ?? .none, stopBits: Int(config.stop_bits),
            flowControl: flows.indices.contains(Int(config.flow)) ? flows[Int(config.flow)] : .none)
    }

    /// One of the line settings, for refusals.
    enum Setting: Sendable {
        case speed, dataBits, parity, stopBits, flowControl
    }

    /// The setting as a refusal names it: `4800 bit/s`, `7 data bits`, `even parity`, `flow=rtscts`.
    func name(of setting: Setting) -> String {
        switch setting {
        case .speed: "\(baudRate) bit/s"
        case .dataBits: "\(dataBits) data bits"
        case .parity: "\(parity) parity"
        case .stopBits: "\(stopBits) stop bits"
        case .flowControl: "flow=\(flowControl.rawValue)"
        }
    }

    /// What to try instead of this value of `setting`: never the value itself.
    func advice(for setting: Setting) -> String {
        switch setting {
        case .speed:
            let others = [9600, 4800, 115_200, 57600].filter { $0 != baudRate }.prefix(2).map { "@\($0)" }
            return "give another speed after the path (e.g. \(others.joined(separator: " or "))), "
                + "or none for an nmea port to have it hunted"
        case .dataBits: return dataBits == 8 ? "try 7 data bits (7E1)" : "try 8 data bits (8N1)"
        case .parity: return parity == .none ? "try even parity (7E1)" : "try no parity (8N1)"
        case .stopBits: return stopBits == 1 ? "try 2 stop bits (8N2)" : "try 1 stop bit (8N1)"
        case .flowControl: return flowControl == .none ? "try flow=xonxoff" : "try flow=none"
        }
    }

    /// The error for `setting` refused by `path` for `reason`; the detail adds what to try instead.
    func refused(_ setting: Setting, path: String, reason: String) -> SensorError {
        .unsupportedSetting(path: path, setting: name(of: setting), detail: "\(reason); \(advice(for: setting))")
    }

    /// The error for a port that kept `kept` bit/s when asked for this speed: a driver that cannot
    /// change speed (Linux's usb_serial_simple keeps 9600).
    func fixedSpeedRefusal(path: String, kept: Int) -> SensorError {
        .unsupportedSetting(
            path: path, setting: name(of: .speed),
            detail: "the port keeps \(kept) bit/s whatever is asked, as a driver that cannot change speed does "
                + "(Linux's usb_serial_simple, which serves ANT USB2 and USB-m sticks); give @\(kept) after the "
                + "path, or use PATH:ant for an ANT stick, which opens at the port's own speed")
    }

    /// The error for the setting a terminal refused (a WORKOUT_SERIAL_BAD_* code).
    func refusal(code: Int32, path: String, backend: String) -> SensorError {
        switch code {
        case Int32(WORKOUT_SERIAL_BAD_BAUD):
            refused(.speed, path: path, reason: "\(backend) takes the standard speeds 50…4000000")
        case Int32(WORKOUT_SERIAL_BAD_DATA_BITS):
            refused(.dataBits, path: path, reason: "the driver did not keep it")
        case Int32(WORKOUT_SERIAL_BAD_PARITY):
            refused(.parity, path: path, reason: "the driver did not keep it")
        case Int32(WORKOUT_SERIAL_BAD_STOP_BITS):
            refused(.stopBits, path: path, reason: "the driver did not keep it")
        default:
            refused(
                .flowControl, path: path,
                reason: flowControl == .dtrDsr
                    ? "Linux terminals have no DTR/DSR flow control" : "the driver did not keep it")
        }
    }
}
