import Foundation
import Synchronization
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutSensors
import WorkoutTestSupport

/// A value behind a lock, shareable with sendable closures.
private final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// Waits until `condition` holds, at most 30 s (WorkoutTestSupport's `waitUntil`: async, as the recorder
/// delivers on the cooperative pool, which a blocking wait would starve).
private func eventually(_ condition: () -> Bool) async -> Bool {
    await waitUntil(30, every: .milliseconds(10)) { condition() }
}

/// The sensor recorder reading real pseudo-terminals into a live session. Run on their own by scripts/test.sh
/// (they wait for frames against the wall clock).
@Suite("Sensor recorder over pseudo-terminals", .serialized)
struct SensorRecorderTests {
    /// A GPS fix dated before the watch's STOP that arrives after it (receivers send a second's data at its
    /// end) still counts in the workout's distance (it is not handed to the heart-rate recovery).
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
        _ = await eventually {
            abs((session.builder.snapshot(at: at(4)).statistics[.distanceWalkingRunning]?.sum?.value ?? 0) - 20) < 0.5
        }
        let distance = session.builder.snapshot(at: at(4)).statistics[.distanceWalkingRunning]?.sum?.value ?? 0
        #expect(
            abs(distance - 20) < 0.5,
            "distance \(distance) m; status \(recorder.status.map { ($0.samplesAdded, $0.refused) })")
    }

    /// The watch's NEXT (swim → T1) and T1's first distance in one chunk (a batching BLE bridge): the
    /// distance belongs to T1, typed for it, and counts there.
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
        _ = await eventually {
            let activities = session.builder.snapshot(at: at(11)).activities
            return activities.count == 2 && activities[1].statistics[.distanceWalkingRunning]?.sum?.value == 1.5
        }
        let activities = session.builder.snapshot(at: at(11)).activities
        try #require(activities.count == 2)
        #expect(activities[1].configuration.activityType == .transition)
        let t1 = activities[1].statistics[.distanceWalkingRunning]?.sum?.value ?? 0
        #expect(t1 == 1.5, "T1 distance \(t1) m; dropped \(session.builder.counters)")
    }

    /// In a pool triathlon, the watch's LAP after NEXT makes a lap that does not overlap the swim's pool
    /// lengths (lap events too): the engine takes it.
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
            WatchLink.length(
                endMilliseconds: 30_000, durationMilliseconds: 30_000, kind: .active, style: .freestyle, strokes: 15))
        #expect(await eventually { session.builder.events.count == 1 })
        clock.set(at(60))
        try watch.write(
            WatchLink.length(
                endMilliseconds: 58_000, durationMilliseconds: 28_000, kind: .active, style: .freestyle, strokes: 14))
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

    /// Two lengths read in one chunk, the first refused by the engine (it began before the recording):
    /// the second, valid length is still recorded.
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
            WatchLink.length(
                endMilliseconds: 20_000, durationMilliseconds: 25_000, kind: .active, style: .freestyle, strokes: 12)
                + WatchLink.length(
                    endMilliseconds: 45_000, durationMilliseconds: 25_000, kind: .active, style: .freestyle, strokes: 13
                ))
        #expect(await eventually { recorder.status[0].decoder.framesDecoded == 3 })
        _ = await eventually {
            session.builder.events.contains { $0.type == .lap && abs($0.end.timeIntervalSince(at(45))) < 0.01 }
        }
        let laps = session.builder.events.filter { $0.type == .lap }
        #expect(
            laps.contains { abs($0.end.timeIntervalSince(at(45))) < 0.01 },
            "laps \(laps.map { ($0.start.timeIntervalSince(origin), $0.end.timeIntervalSince(origin)) }); refused \(recorder.status[0].refused)"
        )
    }

    /// Two GPS receivers on two ports, one moving north at 5 m/s, the other at 3 m/s: both were one source
    /// (`nmea:gps`) with one running total, so each fix's distance was counted from the other receiver's total
    /// (the slower one's fixes went backwards and counted nothing, the faster one's counted the gap between the
    /// two). Each is now a source of its own with its own total, and one of them at a time counts (the workout's
    /// distance is one track's, not both added, and so is its route): the first to report owns GPS while it
    /// reports within 10 s; the other takes over when it falls silent, from its own last total (no jump).
    @Test func twoGPSPortsAreTwoReceiversOfWhichOneCountsAtATime() async throws {
        let fast = try PseudoTerminal()
        let slow = try PseudoTerminal()
        let clock = ManualClock(at(0))
        let recording = InMemoryRecording()
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running, locationType: .outdoor), clock: clock,
            sink: recording)
        try session.start(at: at(0))
        let recorder = SensorRecorder(
            session: session, sensors: [.init(path: fast.path, wire: .nmea), .init(path: slow.path, wire: .nmea)],
            clock: clock)
        try recorder.start()
        defer { recorder.stop() }
        // Both report for 20 s; then only the slow one, for 20 s more.
        for second in 1...40 {
            clock.set(at(Double(second)))
            if second <= 20 {
                try fast.write(rmc(Double(second), north: 5 * Double(second)))
                #expect(await eventually { recorder.status[0].decoder.framesDecoded == second })
            }
            try slow.write(rmc(Double(second), north: 3 * Double(second)))
            #expect(await eventually { recorder.status[1].decoder.framesDecoded == second })
        }
        func distance(_ identifier: String) -> Double {
            recording.samples.filter { $0.type == .distanceWalkingRunning && $0.source.identifier == identifier }
                .reduce(0) { $0 + $1.quantity.value }
        }
        func routePoints() -> Int {
            recording.changes.reduce(0) { count, change in
                if case .route(let points) = change { return count + points.count }
                return count
            }
        }
        // The fast receiver: 19 intervals of 5 m. The slow one counts from 31 s (the fast one's last fix at 20 s
        // is 10 s old at 30 s): 10 intervals of 3 m, from its own fix at 30 s. The route: 20 fixes of the fast one,
        // then the slow one's from 31 s.
        _ = await eventually { abs(distance("nmea:gps:2") - 30) < 1 }
        #expect(abs(distance("nmea:gps") - 95) < 1, "first receiver: \(distance("nmea:gps")) m")
        #expect(abs(distance("nmea:gps:2") - 30) < 1, "second receiver: \(distance("nmea:gps:2")) m")
        let total = recording.samples.filter { $0.type == .distanceWalkingRunning }.reduce(0) { $0 + $1.quantity.value }
        #expect(abs(total - 125) < 1, "the workout's distance: \(total) m")
        #expect(routePoints() == 30)
        let sources = Set(recording.samples.filter { $0.type == .distanceWalkingRunning }.map(\.source))
        #expect(sources.map(\.name).sorted() == ["GPS", "GPS 2"])
    }

    /// A multi-constellation receiver switches talker (GP → GN → GP) on a straight 35 s track north at 5 m/s,
    /// sending GGA and RMC for every fix: the distance counts once, within 2 % of the track's own.
    @Test func distanceFromOneReceiverCountsOnceWhateverTalkerItUses() async throws {
        let gps = try PseudoTerminal()
        let clock = ManualClock(at(0))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running, locationType: .outdoor), clock: clock)
        try session.start(at: at(0))
        let recorder = SensorRecorder(session: session, sensors: [.init(path: gps.path, wire: .nmea)], clock: clock)
        try recorder.start()
        defer { recorder.stop() }

        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC") ?? utc.timeZone
        /// `dddmm.mmmm` of `degrees` (NMEA 0183), and the degrees that text stands for.
        func coordinate(_ degrees: Double, width: Int) -> (text: String, value: Double) {
            let whole = Int(degrees)
            let tenThousandths = Int(((degrees - Double(whole)) * 60 * 10_000).rounded())
            let text = String(
                format: "%0\(width)d%02d.%04d", whole, tenThousandths / 10_000, tenThousandths % 10_000)
            return (text, Double(whole) + Double(tenThousandths) / 10_000 / 60)
        }
        var emitted: [(latitude: Double, longitude: Double)] = []
        for second in 1...35 {
            let talker = second <= 10 ? "GP" : second <= 22 ? "GN" : "GP"
            let date = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: at(Double(second)))
            let time = String(format: "%02d%02d%02d.00", date.hour ?? 0, date.minute ?? 0, date.second ?? 0)
            let day = String(format: "%02d%02d%02d", date.day ?? 0, date.month ?? 0, (date.year ?? 0) % 100)
            // 5 m north a second: 5 / (6371008.8 × π / 180) degrees of latitude.
            let latitude = coordinate(48.1173 + Double(second) * 5 / 111_194.93, width: 2)
            let longitude = coordinate(11.5221, width: 3)
            emitted.append((latitude.value, longitude.value))
            let position = "\(latitude.text),N,\(longitude.text),E"
            clock.set(at(Double(second)))
            try gps.write(
                textLine("\(talker)GGA,\(time),\(position),1,09,0.8,520.0,M,47.0,M,,")
                    + textLine("\(talker)RMC,\(time),A,\(position),9.72,0.0,\(day),,,A"))
            #expect(await eventually { recorder.status[0].decoder.framesDecoded == 2 * second })
        }
        // The track's length from the emitted positions (haversine, mean Earth radius).
        func haversine(_ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double)) -> Double {
            let radians = Double.pi / 180
            let dLatitude = (b.latitude - a.latitude) * radians
            let dLongitude = (b.longitude - a.longitude) * radians
            let h =
                pow(sin(dLatitude / 2), 2) + cos(a.latitude * radians) * cos(b.latitude * radians) * pow(sin(dLongitude / 2), 2)
            return 2 * 6_371_008.8 * asin(h.squareRoot())
        }
        let track = zip(emitted, emitted.dropFirst()).map(haversine).reduce(0, +)
        #expect(abs(track - 170) < 1)
        var distance = 0.0
        _ = await eventually {
            distance = session.builder.snapshot(at: at(35)).statistics[.distanceWalkingRunning]?.sum?.value ?? 0
            return abs(distance - track) <= 0.02 * track
        }
        #expect(abs(distance - track) <= 0.02 * track, "recorded \(distance) m, track \(track) m")
    }
}
