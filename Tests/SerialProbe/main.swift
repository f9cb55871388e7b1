// Test support for WorkoutTransportTests: opens a device through the libserialport backend in a
// process where modem lines and sysfs entries of pseudo-terminals are emulated
// (CModemLineEmulation), so libserialport's own open, configure, read and write code runs over
// the real bytes of a pseudo-terminal. Reports what happens one line at a time on standard output.
//
//   SerialProbe transport PATH SETTINGS COUNT
//     opens PATH with SETTINGS (libserialport backend); prints `opened BACKEND KIND SETTINGS`
//     (settings read back from the driver) and `ready`; reads COUNT bytes and prints
//     `read HEX`; writes them back and prints `echoed`; reads on until the end of the stream
//     and prints `end REASON`; then `emulated N` (calls answered by the emulation).
//   SerialProbe simple:PROTOCOL PATH SETTINGS COUNT
//     as `transport`, with pseudo-terminals behaving as ports of Linux's usb_serial_simple driver
//     (modem-line ioctls answer ENOTTY, the speed stays at 9600), opened as `workout record` opens
//     PATH:PROTOCOL@SETTINGS (the recorder's settings for PROTOCOL, SerialPorts.openSerialPort).
//   SerialProbe pinned:PROTOCOL PATH SETTINGS COUNT
//     as `simple:`, but the port has (emulated) modem lines and only its speed stays at 9600: opened
//     through libserialport.
//   SerialProbe connection PATH SETTINGS COUNT
//     runs a SensorConnection (libserialport backend, 10 ms back-off) and prints each event
//     (`connected`, `bytes HEX`, `disconnected REASON`) until COUNT bytes came, then `counters …`.
//
// A failure prints `error MESSAGE` and exits with status 1.
import CModemLineEmulation
import Foundation
import WorkoutSensors

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

func fail(_ message: String) -> Never {
    say("error \(message)")
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 5, let count = Int(arguments[4]) else {
    fail("usage: SerialProbe transport|connection PATH SETTINGS COUNT")
}
let path = arguments[2]
let settings: SerialSettings
do {
    settings = try SerialSettings(parsing: arguments[3])
} catch {
    fail(error.description)
}

func transportMode(
    _ open: () throws(SensorError) -> any ByteTransport = { () throws(SensorError) in
        try SerialPorts.open(path, settings: settings, backend: .libserialport)
    }
) throws(SensorError) {
    let transport = try open()
    defer { transport.close() }
    say("opened \(transport.backend) \(transport.kind) \(try transport.currentSettings())")
    say("ready")
    var received: [UInt8] = []
    while received.count < count {
        switch try transport.read(upTo: count - received.count, timeout: .seconds(10)) {
        case .bytes(let chunk): received += chunk
        case .timeout: fail("timed out after \(received.count) of \(count) bytes")
        case .endOfStream(let reason): fail("ended after \(received.count) bytes: \(reason)")
        }
    }
    say("read \(hex(received))")
    try transport.write(received, timeout: .seconds(5))
    say("echoed")
    while true {
        switch try transport.read(timeout: .seconds(10)) {
        case .bytes(let chunk): say("read \(hex(chunk))")
        case .timeout: fail("no end of stream within 10 s")
        case .endOfStream(let reason):
            say("end \(reason == .hangUp ? "hangUp" : reason.description)")
            say("emulated \(workout_modem_emulation_calls())")
            return
        }
    }
}

func connectionMode() async throws(SensorError) {
    let connection = SensorConnection(
        path: path, tag: "probe", settings: settings, backend: .libserialport,
        backoff: .init(initial: .milliseconds(10), multiplier: 2, maximum: .milliseconds(40)),
        readTimeout: .milliseconds(20))
    try connection.start()
    var total = 0
    for await event in connection.events {
        switch event {
        case .availability(.connected): say("connected")
        case .availability(.disconnected(let reason)):
            say("disconnected \(reason == .hangUp ? "hangUp" : reason.description)")
        case .bytes(let chunk, _):
            say("bytes \(hex(chunk))")
            total += chunk.count
            if total >= count { connection.stop() }
        case .driver(let note): say("driver \(note)")
        }
    }
    let counters = connection.counters
    say(
        "counters bytes=\(counters.bytesRead) disconnects=\(counters.disconnects) reconnects=\(counters.reconnects) "
            + "readErrors=\(counters.readErrors)")
    say("emulated \(workout_modem_emulation_calls())")
}

do {
    switch arguments[1] {
    case "transport": try transportMode()
    case "connection": try await connectionMode()
    case let mode where mode.hasPrefix("simple:"):
        guard let wire = SensorProtocol(rawValue: String(mode.dropFirst("simple:".count))) else {
            fail("unknown protocol in \(mode)")
        }
        workout_emulate_usb_serial_simple()
        let sensor = SensorRecorder.Sensor(path: path, wire: wire, settings: settings)
        try transportMode { () throws(SensorError) in try SerialPorts.openSerialPort(path, settings: sensor.settings) }
    case let mode where mode.hasPrefix("pinned:"):
        guard let wire = SensorProtocol(rawValue: String(mode.dropFirst("pinned:".count))) else {
            fail("unknown protocol in \(mode)")
        }
        workout_emulate_fixed_speed()
        let sensor = SensorRecorder.Sensor(path: path, wire: wire, settings: settings)
        try transportMode { () throws(SensorError) in try SerialPorts.openSerialPort(path, settings: sensor.settings) }
    default: fail("unknown mode \(arguments[1])")
    }
} catch {
    fail(error.description)
}
