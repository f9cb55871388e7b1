import Foundation
import Synchronization
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutSensors

// Review 5: the reading mapper (decoded readings → samples) and the recorder around it.

private let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)
private func at(_ seconds: Double) -> Date { origin.addingTimeInterval(seconds) }

/// A decoder per protocol kept across chunks, as the recorder keeps one per port.
private struct Ports {
    var decoders: [SensorProtocol: any SensorDecoder] = [:]

    mutating func map(
        _ bytes: [UInt8], _ wire: SensorProtocol, arrival: Date, leg: WorkoutActivityType?, mapper: inout ReadingMapper
    ) -> RecordedInput {
        var decoder = decoders[wire] ?? wire.makeDecoder()
        var readings: [SensorReading] = []
        decoder.decode(bytes, into: &readings)
        decoders[wire] = decoder
        var input = RecordedInput()
        mapper.map(readings, arrival: arrival, leg: leg, into: &input)
        return input
    }
}

/// A GPS RMC sentence `second` seconds after `origin`, `metres` north of a fixed point.
private func rmc(_ second: Double, north metres: Double) -> [UInt8] {
    NMEA.rmc(time: at(second), latitude: 47.9 + metres / 111_195, longitude: 11.3, speed: 5, course: 0)
}

private func sum(_ samples: [QuantitySample], _ type: QuantityType) -> Double {
    samples.filter { $0.type == type }.map(\.quantity.value).reduce(0, +)
}

/// A CSC measurement (0x2A5B) with wheel revolutions and the wheel event time (1/1024 s).
private func csc(revolutions: UInt32, time: Int) -> [UInt8] {
    [0x01] + le32(revolutions) + le16(time)
}

@Suite("Review 5: reading mapper")
struct Review5MapperTests {
    /// A watch or bridge sends one checksum-valid line with a bogus time (a microcontroller's
    /// `millis() - start` underflowing a 32-bit counter: 4 294 966 296 ms). The mapping takes the
    /// smallest arrival − watch time ever seen, so that one line moves the watch's clock 50 days back
    /// for the rest of the session: every later length, button and distance is dated weeks before
    /// the race (and refused by the engine).
    @Test func oneBogusWatchTimeDoesNotShiftEveryLaterWatchDate() throws {
        var mapper = ReadingMapper(lapLength: 25)
        var ports = Ports()
        _ = ports.map(
            WatchLink.strokes(endMilliseconds: 5000, durationMilliseconds: 5000, count: 4), .watch, arrival: at(5),
            leg: .swimming, mapper: &mapper)
        _ = ports.map(
            WatchLink.strokes(endMilliseconds: 4_294_966_296, durationMilliseconds: 1000, count: 1), .watch,
            arrival: at(6), leg: .swimming, mapper: &mapper)
        let length = ports.map(
            WatchLink.length(endMilliseconds: 30_000, durationMilliseconds: 25_000, kind: .active, style: .freestyle, strokes: 12),
            .watch, arrival: at(30), leg: .swimming, mapper: &mapper)
        let end = try #require(length.events.first?.end)
        #expect(abs(end.timeIntervalSince(at(30))) < 1, "length ends \(end.timeIntervalSince(origin)) s after the start")
    }

    /// The athlete wears a foot pod on the bike (common in triathlon: it stays on the shoe) and
    /// records the bike's distance with GPS. The foot pod measures running distance, which the bike
    /// leg does not even collect; it must not switch the bike leg's GPS distance off.
    @Test func aFootPodDoesNotSwitchOffTheBikeLegsGPSDistance() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        var input = RecordedInput()
        func add(_ more: RecordedInput) {
            input.samples += more.samples
            input.route += more.route
        }
        add(ports.map(ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod), .ant, arrival: at(0), leg: .cycling, mapper: &mapper))
        for second in 0..<6 {
            let t = Double(second)
            // The foot pod's page (the feet barely move while pedalling: its total stays).
            add(
                ports.map(
                    ANT.broadcast(channel: 3, ANT.footPodPage(time: t, distance: 12, speed: 0, strides: 7)), .ant,
                    arrival: at(t + 0.9), leg: .cycling, mapper: &mapper))
            // GPS: 10 m a second.
            add(ports.map(rmc(t, north: 10 * t), .nmea, arrival: at(t + 0.95), leg: .cycling, mapper: &mapper))
        }
        #expect(input.route.count == 6)
        let cycling = sum(input.samples, .distanceCycling)
        // Five steps of 10 m.
        #expect(abs(cycling - 50) < 1, "bike-leg distance \(cycling) m; samples \(input.samples.map { "\($0.type.rawValue) \($0.quantity.value)" })")
    }

    /// A dual ANT+/BLE speed sensor (most are) heard twice: by the ANT stick and, tunnelled, by the
    /// watch. The wheel turned 20 times; its distance must count once, not once per radio.
    @Test func oneWheelHeardOverTwoRadiosCountsItsDistanceOnce() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        var samples: [QuantitySample] = []
        samples += ports.map(
            ANT.channelID(channel: 1, deviceNumber: 102, type: .bikeSpeedCadence), .ant, arrival: at(0), leg: .cycling,
            mapper: &mapper
        ).samples
        for second in 0...5 {
            let t = Double(second)
            let revolutions = 100 + 4 * second
            samples += ports.map(
                ANT.broadcast(
                    channel: 1,
                    ANT.speedCadencePage(
                        crankTime: 0, crankRevolutions: 0, wheelTime: (second * 1024) & 0xFFFF,
                        wheelRevolutions: revolutions)), .ant, arrival: at(t + 0.5), leg: .cycling, mapper: &mapper
            ).samples
            samples += ports.map(
                WatchLink.gatt(
                    milliseconds: second * 1000, characteristic: GATT.cscMeasurement,
                    payload: csc(revolutions: UInt32(revolutions), time: (second * 1024) & 0xFFFF)), .watch,
                arrival: at(t + 0.6), leg: .cycling, mapper: &mapper
            ).samples
        }
        let distance = sum(samples, .distanceCycling)
        // 20 revolutions of a 2.105 m wheel.
        #expect(abs(distance - 20 * 2.105) < 0.01, "distance \(distance) m from \(Set(samples.map(\.source.name)))")
    }

    /// An ANT stick's bytes read late (a busy machine, a USB buffer) bring several pages of one
    /// sensor in one chunk, all with the chunk's arrival time. Every increment must count: here the
    /// later ones become zero-length samples at the same instant, and a foot pod at a steady pace
    /// gives equal increments, so the builder drops them as exact duplicates: distance is lost.
    @Test func severalFootPodPagesInOneChunkAllCountInTheWorkout() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        func page(_ second: Double, _ metres: Double) -> [UInt8] {
            ANT.broadcast(channel: 3, ANT.footPodPage(time: second, distance: metres, speed: 3, strides: Int(second)))
        }
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running, locationType: .outdoor), clock: ManualClock(at(0)))
        try session.start(at: at(0))
        var samples = ports.map(
            ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod) + page(1, 10), .ant, arrival: at(1),
            leg: .running, mapper: &mapper
        ).samples
        samples += ports.map(page(2, 13), .ant, arrival: at(2), leg: .running, mapper: &mapper).samples
        // Three pages (seconds 3, 4, 5: 3 m each) read together at 5.1 s.
        samples += ports.map(page(3, 16) + page(4, 19) + page(5, 22), .ant, arrival: at(5.1), leg: .running, mapper: &mapper)
            .samples
        let mapped = sum(samples, .distanceWalkingRunning)
        let report = try session.builder.add(samples)
        try session.stop(at: at(6))
        let recorded = session.builder.snapshot(at: at(6)).statistics[.distanceWalkingRunning]?.sum?.value ?? 0
        #expect(mapped == 12)
        #expect(
            recorded == 12,
            "recorded \(recorded) m of \(mapped) m; dropped \(report.dropped); distance samples \(samples.filter { $0.type == .distanceWalkingRunning }.map { "\($0.start.timeIntervalSince(origin))...\($0.end.timeIntervalSince(origin)) \($0.quantity.value)" })"
        )
    }

    /// The watch measured the first transition (DST) and then went away (unplugged, out of range).
    /// In the second transition GPS is the only source left: its distance must count.
    @Test func gpsMeasuresTransitionsAgainOnceTheWatchIsGone() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        let t1 = ports.map(
            WatchLink.distance(endMilliseconds: 100_000, durationMilliseconds: 1000, meters: 1.5), .watch, arrival: at(100),
            leg: .transition, mapper: &mapper)
        #expect(sum(t1.samples, .distanceWalkingRunning) == 1.5)
        mapper.connectionLost(.watch)
        // Twenty minutes later, in T2: GPS fixes 2 m apart.
        var samples: [QuantitySample] = []
        for second in 1300..<1306 {
            let t = Double(second)
            samples += ports.map(
                rmc(t, north: 2 * (t - 1300)), .nmea, arrival: at(t + 0.5), leg: .transition, mapper: &mapper
            ).samples
        }
        let distance = sum(samples, .distanceWalkingRunning)
        #expect(abs(distance - 10) < 0.5, "T2 distance \(distance) m")
    }

    /// Tunnelled GATT values carry the watch's milliseconds. Two heart-rate values a second apart
    /// that were read in one chunk must keep their own instants (not both the chunk's arrival).
    @Test func tunnelledHeartRateKeepsTheWatchsTime() throws {
        var mapper = ReadingMapper()
        var ports = Ports()
        // Anchor the watch clock: a stroke count at 1000 ms arriving at 1.0 s.
        _ = ports.map(
            WatchLink.strokes(endMilliseconds: 1000, durationMilliseconds: 1000, count: 1), .watch, arrival: at(1),
            leg: .cycling, mapper: &mapper)
        let input = ports.map(
            WatchLink.gatt(milliseconds: 2000, characteristic: GATT.heartRateMeasurement, payload: [0x00, 150])
                + WatchLink.gatt(milliseconds: 3000, characteristic: GATT.heartRateMeasurement, payload: [0x00, 150]),
            .watch, arrival: at(3.2), leg: .cycling, mapper: &mapper)
        let dates = input.samples.filter { $0.type == .heartRate }.map { $0.start.timeIntervalSince(origin) }
        #expect(dates == [2, 3], "heart-rate dates \(dates)")
    }
}

/// A value behind a lock, shareable with sendable closures.
private final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// Waits until `condition` holds, at most `seconds`.
/// (Async: the recorder delivers on the cooperative pool, which a blocking wait would starve.)
private func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

@Suite("Review 5: sensor recorder over pseudo-terminals", .serialized)
struct Review5RecorderTests {
    /// The watch's STOP comes first (the watch sends it when pressed); the GPS fix of the second
    /// before the stop comes half a second later (receivers send a second's data at its end). The
    /// builder still takes data inside the workout after the stop (its state is `ended`, it accepts
    /// until finish), but the recorder hands everything after the stop to the heart-rate recovery,
    /// which keeps heart rate only: the last GPS distance is silently lost (not even counted).
    @Test func dataDatedBeforeTheStopThatArrivesAfterItIsKept() async throws {
        let gps = try PseudoTerminal()
        let watch = try PseudoTerminal()
        let clock = ManualClock(at(0))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running, locationType: .outdoor), clock: clock)
        try session.start(at: at(0))
        let recorder = SensorRecorder(
            session: session,
            sensors: [.init(path: gps.path, wire: .nmea), .init(path: watch.path, wire: .watch)], clock: clock)
        try recorder.start()
        defer { recorder.stop() }
        func frames(_ port: Int) -> Int { recorder.status[port].decoder.framesDecoded }

        clock.set(at(1))
        try gps.write(rmc(1, north: 0))
        #expect(await eventually { frames(0) == 1 })
        clock.set(at(2))
        try gps.write(rmc(2, north: 10))
        #expect(await eventually { recorder.status[0].samplesAdded == 1 })
        // STOP pressed at 3.5 s.
        clock.set(at(3.5))
        try watch.write(WatchLink.button(milliseconds: 3500, .stop))
        #expect(await eventually { session.state == .stopped })
        #expect(session.stopDate == at(3.5))
        // The fix of second 3 (before the stop) arrives at 4.0 s.
        clock.set(at(4))
        try gps.write(rmc(3, north: 20))
        #expect(await eventually { frames(0) == 3 })
        try await Task.sleep(for: .milliseconds(300))
        let distance = session.builder.snapshot(at: at(4)).statistics[.distanceWalkingRunning]?.sum?.value ?? 0
        #expect(abs(distance - 20) < 0.5, "distance \(distance) m; status \(recorder.status.map { ($0.samplesAdded, $0.refused) })")
    }

    /// The watch's NEXT (swim → T1) and its first T1 distance come in one chunk (a BLE bridge that
    /// batches, a reader that fell behind). The recorder reads the current leg once, before the
    /// chunk's buttons are applied, so the T1 distance is typed as swimming distance and T1, which
    /// does not collect that, drops it.
    @Test func readingsAfterANextButtonInTheSameChunkBelongToTheNewLeg() async throws {
        let watch = try PseudoTerminal()
        let clock = ManualClock(at(0))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(
                activityType: .swimBikeRun, locationType: .outdoor, swimmingLocationType: .openWater),
            clock: clock)
        try session.start(at: at(0))
        let recorder = SensorRecorder(session: session, sensors: [.init(path: watch.path, wire: .watch)], clock: clock)
        try recorder.start()
        defer { recorder.stop() }
        // Swimming: strokes (anchor the watch's clock: 5000 ms arrives at 5 s).
        clock.set(at(5))
        try watch.write(WatchLink.strokes(endMilliseconds: 5000, durationMilliseconds: 5000, count: 4))
        #expect(await eventually { recorder.status[0].samplesAdded == 1 })
        // NEXT at 10 s, then T1's first second on foot: 1.5 m; both read at 11 s.
        clock.set(at(11))
        try watch.write(
            WatchLink.button(milliseconds: 10_000, .next)
                + WatchLink.distance(endMilliseconds: 11_000, durationMilliseconds: 1000, meters: 1.5))
        #expect(await eventually { session.currentLegIndex == 1 })
        try await Task.sleep(for: .milliseconds(300))
        let activities = session.builder.snapshot(at: at(11)).activities
        try #require(activities.count == 2)
        #expect(activities[1].configuration.activityType == .transition)
        let t1 = activities[1].statistics[.distanceWalkingRunning]?.sum?.value ?? 0
        #expect(t1 == 1.5, "T1 distance \(t1) m; dropped \(session.builder.counters)")
    }

    /// A pool triathlon: lengths in the swim are lap events; after NEXT, the watch's LAP makes a
    /// lap from the last lap the recorder itself made, else from the session's start, which
    /// overlaps every pool length: the engine refuses it (laps never overlap), at the button's
    /// instant and at now, so LAP never works in a pool race (nor in a pool swim).
    @Test func theLapButtonWorksAfterPoolLengths() async throws {
        let watch = try PseudoTerminal()
        let clock = ManualClock(at(0))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(
                activityType: .swimBikeRun, locationType: .outdoor, swimmingLocationType: .pool,
                lapLength: Quantity(25, .meter)),
            clock: clock)
        try session.start(at: at(0))
        let refusals = Locked<[String?]>([])
        let recorder = SensorRecorder(
            session: session, sensors: [.init(path: watch.path, wire: .watch)], clock: clock, lapLength: 25
        ) { event in
            if case .button(.lap, _, let refused) = event { refusals.withLock { $0.append(refused) } }
        }
        try recorder.start()
        defer { recorder.stop() }
        clock.set(at(30))
        try watch.write(
            WatchLink.length(endMilliseconds: 30_000, durationMilliseconds: 30_000, kind: .active, style: .freestyle, strokes: 15))
        #expect(await eventually { session.builder.events.count == 1 })
        clock.set(at(60))
        try watch.write(
            WatchLink.length(endMilliseconds: 58_000, durationMilliseconds: 28_000, kind: .active, style: .freestyle, strokes: 14))
        #expect(await eventually { session.builder.events.count == 2 })
        clock.set(at(61))
        try watch.write(WatchLink.button(milliseconds: 61_000, .next))
        #expect(await eventually { session.currentLegIndex == 1 })
        clock.set(at(90))
        try watch.write(WatchLink.button(milliseconds: 90_000, .lap))
        #expect(await eventually { !refusals.withLock { $0 }.isEmpty })
        let refused = refusals.withLock { $0 }
        #expect(refused == [nil], "LAP refused: \(refused)")
    }

    /// Two lengths read in one chunk; the first began before the recording started (the watch was
    /// started first), so the engine refuses it. The recorder adds a chunk's events as one batch and
    /// the engine takes a batch all or nothing: the second, valid length is lost with it.
    @Test func oneLengthTheEngineRefusesDoesNotTakeTheOthersOfItsChunkWithIt() async throws {
        let watch = try PseudoTerminal()
        let clock = ManualClock(at(0))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(
                activityType: .swimming, swimmingLocationType: .pool, lapLength: Quantity(25, .meter)),
            clock: clock)
        try session.start(at: at(0))
        let recorder = SensorRecorder(
            session: session, sensors: [.init(path: watch.path, wire: .watch)], clock: clock, lapLength: 25)
        try recorder.start()
        defer { recorder.stop() }
        // Anchor: the watch's 5000 ms arrive at 5 s.
        clock.set(at(5))
        try watch.write(WatchLink.strokes(endMilliseconds: 5000, durationMilliseconds: 5000, count: 4))
        #expect(await eventually { recorder.status[0].samplesAdded == 1 })
        // A length from -5 s to 20 s, and one from 20 s to 45 s, read together at 45 s.
        clock.set(at(45))
        try watch.write(
            WatchLink.length(endMilliseconds: 20_000, durationMilliseconds: 25_000, kind: .active, style: .freestyle, strokes: 12)
                + WatchLink.length(endMilliseconds: 45_000, durationMilliseconds: 25_000, kind: .active, style: .freestyle, strokes: 13))
        #expect(await eventually { recorder.status[0].decoder.framesDecoded == 3 })
        try await Task.sleep(for: .milliseconds(300))
        let laps = session.builder.events.filter { $0.type == .lap }
        #expect(
            laps.contains { abs($0.end.timeIntervalSince(at(45))) < 0.01 },
            "laps \(laps.map { ($0.start.timeIntervalSince(origin), $0.end.timeIntervalSince(origin)) }); refused \(recorder.status[0].refused)")
    }
}
