import CTerminalShims
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A terminal opened directly with termios: pseudo-terminals (which libserialport refuses, as they
/// have no modem lines) and other terminals without modem lines.
///
/// Opened `O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC` (never becomes the controlling terminal, not
/// inherited by child processes), locked (`flock` + TIOCEXCL), set to raw mode with the settings,
/// and read with poll(2). A pseudo-terminal takes any frame but keeps 8 data bits and no parity
/// (Linux forces them: it carries bytes, not bits). The end of file a hung-up terminal returns (the master side of a
/// pseudo-terminal closed, a device unplugged) and EIO/ENXIO/ENODEV are a disconnect. A terminal
/// that keeps a speed of its own whatever is asked (Linux's usb_serial_simple, which serves ANT USB
/// sticks, keeps 9600) is refused with that speed named, unless the settings accept a fixed speed
/// (``SerialSettings/acceptsFixedSpeed``).
public final class TermiosTransport: ByteTransport {
    public let path: String
    public let kind: SerialDeviceKind
    public var backend: SerialBackend { .termios }
    /// The descriptor; -1 once closed. The lock also serialises reads, writes and close.
    private let descriptor: Mutex<Int32>

    /// Opens `path` (a symbolic link is followed) and applies `settings`.
    public init(
        path: String, settings: SerialSettings = .standard, kind: SerialDeviceKind = .pseudoTerminal
    )
        throws(SensorError)
    {
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw openError(path: path, code: errno) }
        guard isatty(fd) == 1 else {
            systemClose(fd)
            throw .notASerialDevice(path: path, detail: "not a terminal")
        }
        do {
            try lockExclusively(fd, path: path)
        } catch {
            systemClose(fd)
            throw error
        }
        var config = settings.cConfig
        let result = workout_serial_configure(
            fd, &config, kind == .pseudoTerminal ? 0 : 1, settings.acceptsFixedSpeed ? 1 : 0)
        if result != 0 {
            let code = errno
            var kept = workout_serial_config()
            let keptRead = workout_serial_read_config(fd, &kept) == 0
            unlockExclusively(fd)
            systemClose(fd)
            if result < 0 { throw .open(path: path, detail: "cannot set the line settings: \(errorText(code))") }
            if result == Int32(WORKOUT_SERIAL_SPEED_NOT_KEPT), keptRead {
                throw settings.fixedSpeedRefusal(path: path, kept: Int(kept.baud))
            }
            throw settings.refusal(code: result, path: path, backend: "termios")
        }
        self.path = path
        self.kind = kind
        self.descriptor = Mutex(fd)
    }

    deinit {
        close()
    }

    public func read(
        into buffer: UnsafeMutableRawBufferPointer, timeout: Duration
    ) throws(SensorError)
        -> ReadOutcome
    {
        try descriptor.withLock { (fd) throws(SensorError) -> ReadOutcome in
            guard fd >= 0 else { throw .closed(path: path) }
            guard buffer.count > 0 else { return .timeout }
            let (revents, pollError) = waitFor(fd, events: Int16(POLLIN), timeout: timeout)
            if pollError != 0 { throw .read(path: path, detail: "poll: \(errorText(pollError))") }
            if revents == 0 { return .timeout }
            if revents & Int16(POLLNVAL) != 0 { throw .read(path: path, detail: "the descriptor is not open") }
            while true {
                let count = systemRead(fd, buffer)
                if count > 0 { return .bytes(count) }
                if count == 0 { return .endOfStream(.hangUp) }
                let code = errno
                switch code {
                case EINTR: continue
                case EAGAIN:
                    // Readable but nothing there: only a hang-up does that.
                    return revents & Int16(POLLHUP | POLLERR) != 0 ? .endOfStream(.hangUp) : .timeout
                default:
                    if isDisconnectError(code) {
                        return .endOfStream(.ioError("\(errorText(code)), \(errorName(code))"))
                    }
                    throw .read(path: path, detail: "\(errorText(code)), \(errorName(code))")
                }
            }
        }
    }

    public func write(_ bytes: [UInt8], timeout: Duration) throws(SensorError) {
        try descriptor.withLock { (fd) throws(SensorError) in
            guard fd >= 0 else { throw .closed(path: path) }
            let clock = ContinuousClock()
            let deadline = clock.now + timeout
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { systemWrite(fd, $0) }
                if written > 0 {
                    offset += written
                    continue
                }
                let code = errno
                if written < 0 && code == EINTR { continue }
                guard written == 0 || code == EAGAIN else {
                    throw .write(path: path, detail: "\(errorText(code)), \(errorName(code))")
                }
                let left = deadline - clock.now
                let (revents, _) = waitFor(fd, events: Int16(POLLOUT), timeout: left)
                if revents == 0 && clock.now >= deadline {
                    throw .write(path: path, detail: "timed out with \(offset) of \(bytes.count) bytes written")
                }
            }
        }
    }

    public func currentSettings() throws(SensorError) -> SerialSettings {
        try descriptor.withLock { (fd) throws(SensorError) -> SerialSettings in
            guard fd >= 0 else { throw .closed(path: path) }
            var config = workout_serial_config()
            guard workout_serial_read_config(fd, &config) == 0 else {
                throw .read(path: path, detail: "cannot read the line settings: \(errorText(errno))")
            }
            return SerialSettings(config)
        }
    }

    public func close() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            unlockExclusively(fd)
            systemClose(fd)
            fd = -1
        }
    }
}
