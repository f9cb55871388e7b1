import Foundation
import SensorTestSupport
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutSensors
import WorkoutTestSupport

@testable import WorkoutCLI

/// The sensors part of `workout record`'s live status line, from a real recorder on pseudo-terminals.
@Suite("workout record: live status of a sensor", .serialized)
struct LiveStatusTests {
    /// A recorder of `sensor` (a hunted speed given 30 s, so a busy machine does not move it on).
    private func recorder(_ sensor: SensorRecorder.Sensor) throws -> SensorRecorder {
        let clock = ManualClock(Date(timeIntervalSinceReferenceDate: 800_000_000))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .cycling, locationType: .outdoor), clock: clock)
        try session.start(at: clock.now())
        return SensorRecorder(session: session, sensors: [sensor], clock: clock, huntWindow: .seconds(30))
    }

    /// Bytes without one good sentence (a receiver at 4800 read at 115200): "no valid data" with what to try,
    /// not `+`; good sentences again: `+`.
    @Test func aPortDeliveringBytesButNoValidFramesSaysNoValidDataWithAHint() async throws {
        let gps = try PseudoTerminal()
        let recorder = try recorder(.init(path: gps.path, wire: .nmea, settings: SerialSettings(parsing: "115200")))
        try recorder.start()
        defer { recorder.stop() }
        #expect(await waitUntil(30) { recorder.status[0].available })
        #expect(RecordCommand.liveStatus(recorder.status[0]) == "nmea+")

        var noise: UInt32 = 7
        let bytes = (0..<600).map { _ in
            noise = noise &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: noise >> 16) & 0x7F | 0x80
        }
        try gps.write(bytes)
        #expect(await waitUntil(30) { recorder.status[0].decoder.bytesConsumed == bytes.count })
        let status = RecordCommand.liveStatus(recorder.status[0])
        #expect(
            status == "nmea: no valid data (wrong speed? try \(gps.path):nmea@4800 or omit the speed to hunt)", "\(status)")

        try gps.write(nmeaSentence("GPGSV,1,1,00"))
        #expect(await waitUntil(30) { recorder.status[0].decoder.unknownMessages == 1 })
        #expect(RecordCommand.liveStatus(recorder.status[0]) == "nmea+")
    }

    /// A port whose speed is hunted shows the speed being tried until a good sentence settles it.
    @Test func aHuntedPortShowsTheSpeedTriedThenTheSpeedFound() async throws {
        let gps = try PseudoTerminal()
        let recorder = try recorder(.init(path: gps.path, wire: .nmea, huntsSpeed: true))
        try recorder.start()
        defer { recorder.stop() }
        #expect(await waitUntil(30) { recorder.status[0].available })
        #expect(RecordCommand.liveStatus(recorder.status[0]) == "nmea: hunting the speed (4800 bit/s)")
        try gps.write(nmeaSentence("GPGSA,A,1,,,,,,,,,,,,,,,"))
        // The hunt settles when the transport reads the sentence; the decoder takes it just after.
        #expect(await waitUntil(30) { recorder.status[0].decoder.unknownMessages == 1 })
        #expect(recorder.status[0].speedHunt == .found(4800))
        #expect(RecordCommand.liveStatus(recorder.status[0]) == "nmea@4800+")
        // Noise after that: the hint proposes another speed than the one found.
        let consumed = recorder.status[0].decoder.bytesConsumed
        try gps.write([UInt8](repeating: 0xFF, count: 300))
        #expect(await waitUntil(30) { recorder.status[0].decoder.bytesConsumed >= consumed + 300 })
        #expect(
            RecordCommand.liveStatus(recorder.status[0])
                == "nmea: no valid data (wrong speed? try \(gps.path):nmea@9600 or omit the speed to hunt)")
    }

    @Test func theFoundSpeedIsReportedWithWhereItIsRemembered() {
        let sensor = SensorRecorder.Sensor(path: "/dev/ttyUSB0", wire: .nmea, huntsSpeed: true)
        let remembered = NMEASpeedHunt.Finding(
            speed: 4800, device: "/dev/serial/by-id/usb-Prolific-if00-port0",
            rememberedIn: "/home/a/.local/state/workout-engine/serial-speeds.json", memoryProblem: nil)
        #expect(
            RecordCommand.speedFoundLine(sensor, remembered)
                == "sensor nmea /dev/ttyUSB0: 4800 bit/s found (remembered in "
                + "/home/a/.local/state/workout-engine/serial-speeds.json for /dev/serial/by-id/usb-Prolific-if00-port0; "
                + "give @SPEED to skip the hunt)")
    }

    /// An ANT port takes a port that keeps its own speed; other protocols do not.
    @Test func onlyANTPortsAcceptAFixedSpeed() {
        #expect(SensorRecorder.Sensor(path: "/dev/ttyUSB0", wire: .ant).settings.acceptsFixedSpeed)
        #expect(!SensorRecorder.Sensor(path: "/dev/ttyUSB0", wire: .nmea).settings.acceptsFixedSpeed)
        #expect(!SensorRecorder.Sensor(path: "/dev/ttyUSB0", wire: .ant, huntsSpeed: true).huntsSpeed)
    }
}
