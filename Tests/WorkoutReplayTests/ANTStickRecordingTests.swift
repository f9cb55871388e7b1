import Foundation
import Synchronization
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutSensors
import WorkoutSimulator
import WorkoutTestSupport

private let origin = Date(timeIntervalSinceReferenceDate: 810_000_000)
private let testKey = [UInt8]([0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF])

/// An emulated USB ANT stick behind a pseudo-terminal reached through a stable symbolic link (as
/// /dev/serial/by-id/… is): unplugging closes the terminal, plugging in opens a new one behind the
/// same link with a fresh stick (silent until configured).
private final class PluggedStick: Sendable {
    let link: String
    private let current = Mutex<(terminal: PseudoTerminal, emulation: ANTStickEmulation, generation: Int)?>(nil)
    private let stopped = Mutex<[Int: Bool]>([:])
    private let running = Mutex(0)
    private let generations = Mutex(0)

    init(folder: URL) throws {
        link = folder.appendingPathComponent("ant-stick").path
        try plugIn()
    }

    var emulation: ANTStickEmulation? { current.withLock { $0?.emulation } }

    /// A new pseudo-terminal and stick behind the link, answering the host on a thread of its own.
    func plugIn() throws {
        let terminal = try PseudoTerminal()
        let emulation = ANTStickEmulation(networkKey: testKey)
        let generation = generations.withLock { $0 += 1; return $0 }
        current.withLock { $0 = (terminal, emulation, generation) }
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: terminal.path)
        running.withLock { $0 += 1 }
        let thread = Thread { [self] in
            while !(stopped.withLock { $0[generation] ?? false }) {
                let bytes = (try? terminal.read(timeout: .milliseconds(10))) ?? []
                if !bytes.isEmpty {
                    let answer = emulation.hostWrote(bytes)
                    if !answer.isEmpty { _ = try? terminal.write(answer, whenFull: .drop) }
                }
            }
            running.withLock { $0 -= 1 }
        }
        thread.start()
    }

    /// Closes the terminal (the host's reads hang up) and removes the link, as udev removes
    /// /dev/serial/by-id/… when a stick is pulled out.
    func unplug() {
        let generation = current.withLock { state -> Int in
            defer { state = nil }
            return state?.generation ?? 0
        }
        stopped.withLock { $0[generation] = true }
        while running.withLock({ $0 }) > 0 { usleep(1000) }
        try? FileManager.default.removeItem(atPath: link)
    }

    /// `sensor` transmits `page` at `time`; what the stick passes on goes to the host.
    func transmit(_ sensor: ANTStickEmulation.Sensor, _ page: [UInt8], at time: Double) {
        current.withLock { state in
            guard let state else { return }
            let bytes = state.emulation.transmit(sensor, page: page, at: time)
            if !bytes.isEmpty { _ = try? state.terminal.write(bytes, whenFull: .drop) }
        }
    }

    /// Time passes on the air without messages (search timeouts).
    func advance(to time: Double) {
        current.withLock { state in
            guard let state else { return }
            let bytes = state.emulation.advance(to: time)
            if !bytes.isEmpty { _ = try? state.terminal.write(bytes, whenFull: .drop) }
        }
    }

    deinit {
        stopped.withLock { for key in $0.keys { $0[key] = true } }
        current.withLock { state in if let generation = state?.generation { stopped.withLock { $0[generation] = true } } }
        try? FileManager.default.removeItem(atPath: link)
    }
}

/// ANT+ pages written here from the profiles (not with the project's encoders).
private enum Pages {
    /// Heart-rate page 4: previous and last beat times (1/1024 s), beat count, heart rate.
    static func heartRate(beat: Int, beatTime: Int, previous: Int, bpm: Int) -> [UInt8] {
        [
            0x04, 0xFF, UInt8(previous & 0xFF), UInt8((previous >> 8) & 0xFF), UInt8(beatTime & 0xFF),
            UInt8((beatTime >> 8) & 0xFF), UInt8(beat & 0xFF), UInt8(bpm),
        ]
    }

    /// Power page 0x10: event count, no balance, cadence, accumulated power, instantaneous power.
    static func power(event: Int, accumulated: Int, watts: Int) -> [UInt8] {
        [
            0x10, UInt8(event & 0xFF), 0xFF, 90, UInt8(accumulated & 0xFF), UInt8((accumulated >> 8) & 0xFF),
            UInt8(watts & 0xFF), UInt8(watts >> 8),
        ]
    }
}

/// A heart-rate strap and a power meter, sending 4 messages a second as the profiles' periods say.
private struct Athlete {
    var strap = ANTStickEmulation.Sensor(number: 4711, type: 120)
    var meter = ANTStickEmulation.Sensor(number: 1234, type: 11)
    var beats = 0
    var beatTime = 0
    var previous = 0
    var events = 0
    var accumulated = 0
    var delivered: (heartRate: [Int], power: [Int]) = ([], [])

    /// Second `second`'s messages (4 per sensor), values varying with the second.
    mutating func second(_ second: Int, stick: PluggedStick, heartRate: Bool = true, power: Bool = true) {
        let bpm = 120 + (second * 7) % 21
        let watts = 200 + (second * 13) % 61
        let beatsThisSecond = max(1, bpm / 60)
        previous = beatTime
        beatTime = (beatTime + 1024 / beatsThisSecond) & 0xFFFF
        beats += beatsThisSecond
        events += 1
        accumulated = (accumulated + watts) & 0xFFFF
        for quarter in 0..<4 {
            let time = Double(second) + Double(quarter) / 4
            if heartRate {
                stick.transmit(strap, Pages.heartRate(beat: beats, beatTime: beatTime, previous: previous, bpm: bpm), at: time)
            }
            if power { stick.transmit(meter, Pages.power(event: events, accumulated: accumulated, watts: watts), at: time) }
        }
        if heartRate { delivered.heartRate.append(bpm) }
        if power { delivered.power.append(watts) }
    }
}

/// A cycling session recording one ANT port with `plan`.
private func recording(_ link: String, plan: ANTHostPlan) throws -> (WorkoutSession, SensorRecorder, ManualClock, InMemoryRecording) {
    let clock = ManualClock(origin)
    let sink = InMemoryRecording()
    let session = try WorkoutSession(
        configuration: WorkoutConfiguration(activityType: .cycling, locationType: .outdoor), clock: clock, sink: sink)
    try session.start(at: origin)
    let recorder = SensorRecorder(
        session: session, sensors: [.init(path: link, wire: .ant, ant: plan)], clock: clock,
        backoff: .init(initial: .milliseconds(20), multiplier: 2, maximum: .milliseconds(200)))
    try recorder.start()
    return (session, recorder, clock, sink)
}

private func plan(pinned: [ANTProfile: UInt16] = [:], profiles: [ANTProfile] = [.heartRate, .power]) -> ANTHostPlan {
    ANTHostPlan(
        networkKey: ANTNetworkKey(bytes: testKey) ?? ANTNetworkKey(bytes: [0, 0, 0, 0, 0, 0, 0, 1])!, profiles: profiles,
        pinned: pinned, responseTimeout: 3, reopenInitial: 0.05, reopenMaximum: 0.2)
}

/// Whether the stick has the channels of `types` open (the host configured it).
private func opened(_ stick: PluggedStick, _ count: Int) -> Bool {
    (stick.emulation?.hostFrames.filter { $0.count > 3 && $0[2] == 0x4B }.count ?? 0) >= count
        && (stick.emulation?.anyChannelOpen ?? false)
}

private func mean(_ values: [Int]) -> Double { Double(values.reduce(0, +)) / Double(max(1, values.count)) }

/// Recording from a USB ANT stick that is silent until configured, on pseudo-terminals (no hardware).
@Suite("Recording from an emulated USB ANT stick", .serialized)
struct ANTStickRecordingTests {
    /// The host configures the stick (byte for byte what the protocol document says), then heart rate
    /// and power are recorded: averages within ±1 bpm and ±2 W of what the sensors delivered.
    @Test func aSilentStickIsConfiguredAndRecordedEndToEnd() async throws {
        let folder = try temporaryFolder("ant")
        defer { try? FileManager.default.removeItem(at: folder) }
        let stick = try PluggedStick(folder: folder)
        let (session, recorder, clock, _) = try recording(stick.link, plan: plan())
        defer { recorder.stop() }
        #expect(await waitUntil(20, every: .milliseconds(10)) { opened(stick, 2) }, "the host did not configure the stick")
        // What the host wrote, against the protocol document's layouts (frames as openant 1.3.4 makes them).
        let hex = stick.emulation?.hostFrames.map { $0.map { String(format: "%02X", $0) }.joined(separator: " ") }
        #expect(
            hex == [
                "A4 01 4A 00 EF", "A4 02 4D 00 54 BF", "A4 09 46 00 01 23 45 67 89 AB CD EF EB", "A4 02 6E 00 80 48",
                "A4 03 42 00 00 00 E5", "A4 05 51 00 00 00 78 00 88", "A4 02 44 00 0C EE", "A4 03 43 00 86 1F 7D",
                "A4 02 45 00 39 DA", "A4 01 4B 00 EE", "A4 03 42 01 00 00 E4", "A4 05 51 01 00 00 0B 00 FA",
                "A4 02 44 01 0C EF", "A4 03 43 01 F6 1F 0C", "A4 02 45 01 39 DB", "A4 01 4B 01 EF",
            ])
        var athlete = Athlete()
        let base = recorder.status[0].decoder.framesDecoded
        for second in 0..<40 {
            clock.set(origin.addingTimeInterval(Double(second) + 1))
            athlete.second(second, stick: stick)
            let expected = base + (second + 1) * 8
            _ = await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].decoder.framesDecoded >= expected }
        }
        let statistics = session.builder.snapshot(at: clock.now()).statistics
        let heartRate = try #require(statistics[.heartRate]?.average?.value)
        let power = try #require(statistics[.cyclingPower]?.average?.value)
        #expect(abs(heartRate - mean(athlete.delivered.heartRate)) <= 1, "\(heartRate) vs \(mean(athlete.delivered.heartRate))")
        #expect(abs(power - mean(athlete.delivered.power)) <= 2, "\(power) vs \(mean(athlete.delivered.power))")
        #expect(recorder.status[0].devices["ant:120:4711"] == true)
        #expect(recorder.status[0].devices["ant:11:1234"] == true)
    }

    /// The stick unplugged mid-recording and plugged back behind the same link: reconfigured from a
    /// reset, recording resumes, and no sample falls in the gap.
    @Test func aReplugedStickIsReconfiguredAndRecordingResumes() async throws {
        let folder = try temporaryFolder("ant")
        defer { try? FileManager.default.removeItem(at: folder) }
        let stick = try PluggedStick(folder: folder)
        let (_, recorder, clock, sink) = try recording(stick.link, plan: plan())
        defer { recorder.stop() }
        #expect(await waitUntil(20, every: .milliseconds(10)) { opened(stick, 2) })
        var athlete = Athlete()
        let base = recorder.status[0].decoder.framesDecoded
        for second in 0..<10 {
            clock.set(origin.addingTimeInterval(Double(second) + 1))
            athlete.second(second, stick: stick)
            _ = await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].decoder.framesDecoded >= base + (second + 1) * 8 }
        }
        stick.unplug()
        #expect(await waitUntil(20, every: .milliseconds(10)) { !recorder.status[0].available })
        clock.set(origin.addingTimeInterval(30))
        try stick.plugIn()
        #expect(
            await waitUntil(20, every: .milliseconds(10)) { opened(stick, 2) },
            "the replugged stick was not configured: \(recorder.status[0].connection) \(stick.emulation?.hostFrames.count ?? -1)")
        #expect(stick.emulation?.hostFrames.first == [0xA4, 0x01, 0x4A, 0x00, 0xEF])  // a reset first
        #expect(await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].devices["ant:120:4711"] != nil })
        let before = recorder.status[0].decoder.framesDecoded
        for second in 30..<40 {
            clock.set(origin.addingTimeInterval(Double(second) + 1))
            athlete.second(second, stick: stick)
            _ = await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].decoder.framesDecoded >= before + (second - 29) * 8 }
        }
        let heartRate = sink.samples.filter { $0.type == .heartRate }.map { $0.start.timeIntervalSince(origin) }
        #expect(heartRate.contains { $0 > 30 }, "recording resumed")
        #expect(!heartRate.contains { $0 > 11 && $0 < 30 }, "nothing in the gap: \(heartRate)")
        #expect(recorder.status[0].connection.reconnects >= 1)
    }

    /// A strap out of range (search timeout, channel closed) and back: the channel is reopened with
    /// the strap's number, the strap is unavailable meanwhile, and nothing is recorded in the gap.
    @Test func aSensorOutOfRangeComesBackAndNothingIsInventedInTheGap() async throws {
        let folder = try temporaryFolder("ant")
        defer { try? FileManager.default.removeItem(at: folder) }
        let stick = try PluggedStick(folder: folder)
        let (_, recorder, clock, sink) = try recording(stick.link, plan: plan(profiles: [.heartRate]))
        defer { recorder.stop() }
        #expect(await waitUntil(20, every: .milliseconds(10)) { opened(stick, 1) })
        var athlete = Athlete()
        let base = recorder.status[0].decoder.framesDecoded
        for second in 0..<10 {
            clock.set(origin.addingTimeInterval(Double(second) + 1))
            athlete.second(second, stick: stick, power: false)
            _ = await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].decoder.framesDecoded >= base + (second + 1) * 4 }
        }
        // Out of range for 40 s: RX fail go to search at 12 s, search timeout (30 s) at 42 s.
        for second in 10..<50 {
            clock.set(origin.addingTimeInterval(Double(second) + 1))
            stick.advance(to: Double(second) + 1)
        }
        #expect(await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].devices["ant:120:4711"] == false })
        // The host opens the channel again (a second open 0x4B after the close) with the strap's number.
        #expect(await waitUntil(20, every: .milliseconds(10)) { (stick.emulation?.hostFrames.filter { $0[2] == 0x4B }.count ?? 0) >= 2 })
        let reset = stick.emulation?.hostFrames.last { $0[2] == 0x51 }
        #expect(reset.map { Array($0[4...5]) } == [0x67, 0x12])  // 4711
        let before = recorder.status[0].decoder.framesDecoded
        for second in 60..<70 {
            clock.set(origin.addingTimeInterval(Double(second) + 1))
            athlete.second(second, stick: stick, power: false)
            _ = await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].decoder.framesDecoded >= before + (second - 59) * 4 }
        }
        #expect(await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].devices["ant:120:4711"] == true })
        let times = sink.samples.filter { $0.type == .heartRate }.map { $0.start.timeIntervalSince(origin) }
        #expect(times.contains { $0 > 60 }, "recording resumed")
        #expect(!times.contains { $0 > 11 && $0 < 60 }, "nothing in the gap")
    }

    /// Two straps in range. Pinned: only the pinned strap is recorded. Unpinned: the first one found
    /// is kept, and the samples are named by it.
    @Test(arguments: [true, false])
    func twoStrapsInRangeNeverMix(pinned: Bool) async throws {
        let folder = try temporaryFolder("ant")
        defer { try? FileManager.default.removeItem(at: folder) }
        let stick = try PluggedStick(folder: folder)
        let (_, recorder, clock, sink) = try recording(
            stick.link, plan: plan(pinned: pinned ? [.heartRate: 2222] : [:], profiles: [.heartRate]))
        defer { recorder.stop() }
        #expect(await waitUntil(20, every: .milliseconds(10)) { opened(stick, 1) })
        let mine = ANTStickEmulation.Sensor(number: pinned ? 2222 : 1111, type: 120)
        let other = ANTStickEmulation.Sensor(number: pinned ? 1111 : 2222, type: 120)
        // Pinned, the other strap transmits first in every slot (and must not be heard); unpinned,
        // "mine" transmits first, so the wildcard channel finds it first and keeps it.
        let (earlier, later) = pinned ? (other, mine) : (mine, other)
        let base = recorder.status[0].decoder.framesDecoded
        for second in 0..<10 {
            clock.set(origin.addingTimeInterval(Double(second) + 1))
            for quarter in 0..<4 {
                let time = Double(second) + Double(quarter) / 4
                for strap in [earlier, later] {
                    stick.transmit(strap, Pages.heartRate(beat: second, beatTime: 0, previous: 0, bpm: bpm(strap)), at: time)
                }
            }
            _ = await waitUntil(20, every: .milliseconds(10)) { recorder.status[0].decoder.framesDecoded >= base + (second + 1) * 4 }
        }
        let samples = sink.samples.filter { $0.type == .heartRate }
        #expect(!samples.isEmpty)
        #expect(samples.allSatisfy { $0.quantity.value == Double(bpm(mine)) }, "\(samples.map(\.quantity.value))")
        #expect(samples.allSatisfy { $0.source.identifier == "ant:120:\(mine.number)" })
    }
}

private func bpm(_ strap: ANTStickEmulation.Sensor) -> Int { strap.number == 1111 ? 100 : 150 }
