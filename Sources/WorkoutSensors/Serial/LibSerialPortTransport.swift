import CSerialPort
import CTerminalShims
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A serial port opened with libserialport: UARTs, USB serial adapters (ANT sticks, GPS mice,
/// microcontrollers), Bluetooth RFCOMM ports.
///
/// The port is looked up by its resolved path (`/dev/serial/by-id/…` links work), locked (`flock`
/// on a descriptor of the transport's own, taken before libserialport touches the port), opened
/// read-write with `sp_open`, put in exclusive mode (TIOCEXCL), and set up with the
/// settings one at a time (so a refusal names the setting), then read back to check the driver kept
/// them (a speed the driver did not keep is accepted only with ``SerialSettings/acceptsFixedSpeed``).
/// libserialport 0.1.1 does not enable RTS/CTS flow control on Linux (its code puts CRTSCTS
/// in the input flags, where the driver ignores it), so the transport sets CRTSCTS in the control
/// flags of the port's handle itself. Reads wait with poll(2) on the port's handle and take the bytes with
/// `sp_nonblocking_read`: libserialport's own blocking read spins on the end of file an unplugged
/// device returns, where a poll sees the hang-up.
public final class LibSerialPortTransport: ByteTransport {
    public let path: String
    public var kind: SerialDeviceKind { .serialPort }
    public var backend: SerialBackend { .libserialport }

    /// libserialport's port and its descriptor; `port` is nil once closed. Only used under the
    /// mutex, which is what makes sharing the pointer safe.
    private struct State: @unchecked Sendable {
        var port: OpaquePointer?
        var fd: Int32
        /// Our own descriptor of the device, holding the advisory lock.
        var lockFD: Int32
    }

    private let state: Mutex<State>

    /// Opens the serial port at `path` (a symbolic link is followed) with `settings`.
    public init(path: String, settings: SerialSettings = .standard) throws(SensorError) {
        let name = resolvedPath(path) ?? path
        var found: OpaquePointer?
        let lookup = sp_get_port_by_name(name, &found)
        guard lookup == SP_OK, let port = found else {
            var status = stat()
            if stat(path, &status) != 0 { throw openError(path: path, code: errno) }
            if (try? SerialPorts.kind(of: path)) == .pseudoTerminal {
                throw .notASerialDevice(
                    path: path,
                    detail: "a pseudo-terminal, which libserialport does not open: use the automatic backend")
            }
            throw .notASerialDevice(
                path: path,
                detail: "libserialport knows no serial port \(name); the kernel lists them in /sys/class/tty")
        }
        // The lock is taken on a descriptor of our own before sp_open, which reconfigures the
        // port: a port another program holds is reported busy without touching its settings.
        let lockFD = systemOpen(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard lockFD >= 0 else {
            let code = errno
            sp_free_port(port)
            throw openError(path: path, code: code)
        }
        do {
            try takeLock(lockFD, path: path)
        } catch {
            systemClose(lockFD)
            sp_free_port(port)
            throw error
        }
        guard sp_open(port, SP_MODE_READ_WRITE) == SP_OK else {
            let code = sp_last_error_code()
            systemClose(lockFD)
            sp_free_port(port)
            if code == ENOTTY {
                throw .notASerialDevice(
                    path: path, detail: "it has no modem lines (TIOCMGET: ENOTTY), as a pseudo-terminal has none")
            }
            throw openError(path: path, code: code)
        }
        var fd: Int32 = -1
        let handle = withUnsafeMutableBytes(of: &fd) { sp_get_port_handle(port, $0.baseAddress) }
        do throws(SensorError) {
            guard handle == SP_OK, fd >= 0 else {
                throw .open(path: path, detail: "libserialport gave no handle")
            }
            _ = workout_set_exclusive(fd, 1)
            try LibSerialPortTransport.apply(settings, to: port, fd: fd, path: path)
        } catch {
            _ = workout_set_exclusive(fd, 0)
            sp_close(port)
            sp_free_port(port)
            systemClose(lockFD)
            throw error
        }
        self.path = path
        self.state = Mutex(State(port: port, fd: fd, lockFD: lockFD))
    }

    deinit {
        close()
    }

    /// Sets each value with its own libserialport call, then checks what the driver kept.
    private static func apply(
        _ settings: SerialSettings, to port: OpaquePointer, fd: Int32, path: String
    )
        throws(SensorError)
    {
        func check(_ result: sp_return, _ setting: SerialSettings.Setting) throws(SensorError) {
            guard result != SP_OK else { return }
            switch result {
            case SP_ERR_SUPP, SP_ERR_ARG:
                throw settings.refused(setting, path: path, reason: "libserialport refused it")
            default:
                let code = sp_last_error_code()
                if code == EINVAL { throw settings.refused(setting, path: path, reason: "the driver refused it: EINVAL") }
                throw .open(path: path, detail: "cannot set \(settings.name(of: setting)): \(errorText(code))")
            }
        }
        let parity: [SerialSettings.Parity: sp_parity] = [
            .none: SP_PARITY_NONE, .odd: SP_PARITY_ODD, .even: SP_PARITY_EVEN, .mark: SP_PARITY_MARK,
            .space: SP_PARITY_SPACE,
        ]
        let flow: [SerialSettings.FlowControl: sp_flowcontrol] = [
            .none: SP_FLOWCONTROL_NONE, .xonXoff: SP_FLOWCONTROL_XONXOFF, .rtsCts: SP_FLOWCONTROL_RTSCTS,
            .dtrDsr: SP_FLOWCONTROL_DTRDSR,
        ]
        try check(sp_set_baudrate(port, Int32(clamping: settings.baudRate)), .speed)
        try check(sp_set_bits(port, Int32(settings.dataBits)), .dataBits)
        try check(sp_set_parity(port, parity[settings.parity] ?? SP_PARITY_NONE), .parity)
        try check(sp_set_stopbits(port, Int32(settings.stopBits)), .stopBits)
        try check(sp_set_flowcontrol(port, flow[settings.flowControl] ?? SP_FLOWCONTROL_NONE), .flowControl)
        if workout_set_hardware_flow(fd, settings.flowControl == .rtsCts ? 1 : 0) != 0 {
            throw settings.refused(.flowControl, path: path, reason: "the driver refused RTS/CTS: \(errorName(errno))")
        }
        let actual = try readSettings(port, fd: fd, path: path)
        var kept = actual
        if kept.baudRate != settings.baudRate {
            // A driver that ignores speed changes: accepted at its own speed where the settings allow it.
            guard settings.acceptsFixedSpeed else { throw settings.fixedSpeedRefusal(path: path, kept: kept.baudRate) }
            kept.baudRate = settings.baudRate
        }
        kept.acceptsFixedSpeed = settings.acceptsFixedSpeed
        if kept != settings {
            let setting: SerialSettings.Setting =
                kept.dataBits != settings.dataBits
                ? .dataBits
                : kept.parity != settings.parity ? .parity : kept.stopBits != settings.stopBits ? .stopBits : .flowControl
            throw settings.refused(setting, path: path, reason: "the driver kept \(actual) instead")
        }
    }

    /// The port's settings as libserialport reads them from the driver.
    private static func readSettings(
        _ port: OpaquePointer, fd: Int32, path: String
    ) throws(SensorError)
        -> SerialSettings
    {
        var found: OpaquePointer?
        guard sp_new_config(&found) == SP_OK, let config = found else {
            throw .read(path: path, detail: "out of memory")
        }
        defer { sp_free_config(config) }
        guard sp_get_config(port, config) == SP_OK else {
            throw .read(path: path, detail: "cannot read the line settings: \(errorText(sp_last_error_code()))")
        }
        var baud: Int32 = 0
        var bits: Int32 = 0
        var stop: Int32 = 0
        var parity = SP_PARITY_NONE
        var cts = SP_CTS_IGNORE
        var dsr = SP_DSR_IGNORE
        var xonXoff = SP_XONXOFF_DISABLED
        _ = sp_get_config_baudrate(config, &baud)
        _ = sp_get_config_bits(config, &bits)
        _ = sp_get_config_stopbits(config, &stop)
        _ = sp_get_config_parity(config, &parity)
        _ = sp_get_config_cts(config, &cts)
        _ = sp_get_config_dsr(config, &dsr)
        _ = sp_get_config_xon_xoff(config, &xonXoff)
        let parities: [sp_parity: SerialSettings.Parity] = [
            SP_PARITY_ODD: .odd, SP_PARITY_EVEN: .even, SP_PARITY_MARK: .mark, SP_PARITY_SPACE: .space,
        ]
        // libserialport has no flow-control getter: the input lines and XON/XOFF tell it, and
        // RTS/CTS is read from the control flags (see the type's comment).
        var termios = workout_serial_config()
        let hardwareFlow = workout_serial_read_config(fd, &termios) == 0 && termios.flow == 2
        let flow: SerialSettings.FlowControl =
            hardwareFlow || cts == SP_CTS_FLOW_CONTROL
            ? .rtsCts : dsr == SP_DSR_FLOW_CONTROL ? .dtrDsr : xonXoff == SP_XONXOFF_INOUT ? .xonXoff : .none
        return SerialSettings(
            uncheckedBaudRate: Int(baud), dataBits: Int(bits), parity: parities[parity] ?? .none,
            stopBits: Int(stop), flowControl: flow)
    }

    public func read(
        into buffer: UnsafeMutableRawBufferPointer, timeout: Duration
    ) throws(SensorError)
        -> ReadOutcome
    {
        try state.withLock { (state) throws(SensorError) -> ReadOutcome in
            guard let port = state.port else { throw .closed(path: path) }
            guard buffer.count > 0 else { return .timeout }
            let clock = ContinuousClock()
            let deadline = clock.now + timeout
            var emptyReads = 0
            while true {
                let (revents, pollError) = waitFor(state.fd, events: Int16(POLLIN), timeout: deadline - clock.now)
                if pollError != 0 { throw .read(path: path, detail: "poll: \(errorText(pollError))") }
                if revents == 0 { return .timeout }
                if revents & Int16(POLLNVAL) != 0 { throw .read(path: path, detail: "the descriptor is not open") }
                let result = sp_nonblocking_read(port, buffer.baseAddress, buffer.count).rawValue
                if result > 0 { return .bytes(Int(result)) }
                if result < 0 {
                    let code = sp_last_error_code()
                    if isDisconnectError(code) {
                        return .endOfStream(.ioError("\(errorText(code)), \(errorName(code))"))
                    }
                    throw .read(path: path, detail: "\(errorText(code)), \(errorName(code))")
                }
                // Readable but nothing read: the end of file of a hung-up terminal (libserialport
                // reports it, like EAGAIN, as 0 bytes).
                emptyReads += 1
                if revents & Int16(POLLHUP | POLLERR) != 0 || emptyReads >= 3 { return .endOfStream(.hangUp) }
            }
        }
    }

    public func write(_ bytes: [UInt8], timeout: Duration) throws(SensorError) {
        try state.withLock { (state) throws(SensorError) in
            guard let port = state.port else { throw .closed(path: path) }
            guard !bytes.isEmpty else { return }
            // libserialport reads a timeout of 0 as "wait for ever".
            let milliseconds = UInt32(max(1, pollMilliseconds(timeout)))
            let result = bytes.withUnsafeBytes { sp_blocking_write(port, $0.baseAddress, $0.count, milliseconds) }
            if result.rawValue < 0 {
                let code = sp_last_error_code()
                throw .write(path: path, detail: "\(errorText(code)), \(errorName(code))")
            }
            if Int(result.rawValue) < bytes.count {
                throw .write(path: path, detail: "timed out with \(result.rawValue) of \(bytes.count) bytes written")
            }
        }
    }

    public func currentSettings() throws(SensorError) -> SerialSettings {
        try state.withLock { (state) throws(SensorError) -> SerialSettings in
            guard let port = state.port else { throw .closed(path: path) }
            return try LibSerialPortTransport.readSettings(port, fd: state.fd, path: path)
        }
    }

    public func close() {
        state.withLock { state in
            guard let port = state.port else { return }
            _ = workout_set_exclusive(state.fd, 0)
            sp_close(port)
            sp_free_port(port)
            systemClose(state.lockFD)
            state.port = nil
            state.fd = -1
            state.lockFD = -1
        }
    }
}

/// The path with every symbolic link resolved, or nil when it does not exist.
func resolvedPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
