import Foundation
import Synchronization
import WorkoutEngine
import WorkoutModel

/// Records a session from serial sensors: one connection and decoder per port, one mapper, one session.
///
/// Each port is read on its own thread (`SensorConnection`), decoded as its protocol says, mapped to
/// samples, lap events, route points and buttons (`ReadingMapper`) and added to the session's
/// builder. A disconnect marks the sensor unavailable, forgets its running totals (nothing is
/// invented across the gap) and reconnects with back-off while the session goes on. Watch buttons
/// drive the session: NEXT moves a multisport race to its next leg (a lap otherwise), LAP adds a
/// lap, PAUSE/RESUME pause and resume, STOP stops exercise. After the stop, heart rate goes to the
/// session's heart-rate recovery. Nothing here reads the wall clock: dates come from `clock`.
/// An `nmea` port whose sensor ``Sensor/huntsSpeed`` has its speed found by an ``NMEASpeedHunt``
/// (reported as ``Event/speedFound(_:_:_:)``, remembered in `speedMemory`); ``SensorStatus`` tells
/// a port that delivers bytes but no valid frame.
public final class SensorRecorder: Sendable {
    /// One sensor port: a device path, its protocol and serial settings.
    public struct Sensor: Sendable, Hashable {
        public var path: String
        public var wire: SensorProtocol
        public var settings: SerialSettings
        /// Whether the speed is hunted (``NMEASpeedHunt``, `nmea` ports only) rather than taken
        /// from `settings`.
        public var huntsSpeed: Bool
        /// For `ant`: how the host configures the stick on every connect (a USB ANT stick is silent
        /// until configured). Nil listens only (an ANT module something else configured, a capture).
        public var ant: ANTHostPlan?
        /// For `ant`: the wheel circumference for bike speed and distance, metres.
        public var wheelCircumference: Double

        /// A port; an `ant` port accepts a port that keeps a speed of its own
        /// (``SerialSettings/acceptsFixedSpeed``: an ANT USB stick's USB side has no bit rate).
        public init(
            path: String, wire: SensorProtocol, settings: SerialSettings = .standard, huntsSpeed: Bool = false,
            ant: ANTHostPlan? = nil, wheelCircumference: Double = 2.105
        ) {
            self.path = path
            self.wire = wire
            self.settings = settings
            self.huntsSpeed = huntsSpeed && wire == .nmea
            if wire == .ant { self.settings.acceptsFixedSpeed = true }
            self.ant = ant
            self.wheelCircumference = wheelCircumference
        }

        /// A fresh decoder for this port.
        public func makeDecoder() -> any SensorDecoder {
            switch wire {
            case .ant: ANTDecoder(configuration: ANTDecoder.Configuration(wheelCircumference: wheelCircumference))
            case .nmea, .watch: wire.makeDecoder()
            }
        }

        /// The port's driver: the ANT host when `ant` is set, else one that writes nothing.
        public func makeDriver() -> any ConnectionDriver {
            if wire == .ant, let plan = ant { return ANTDriver(plan: plan) }
            return PassiveDriver()
        }
    }

    /// Something the user should hear about while recording.
    public enum Event: Sendable {
        /// A sensor became available or unavailable.
        case availability(Sensor, SensorConnection.Availability, Date)
        /// A watch button was pressed (and applied, or refused with the engine's reason).
        case button(WatchLink.Button, Date, refused: String?)
        /// The engine refused input from a sensor (counted; the message says why).
        case refused(Sensor, String)
        /// A hunted speed was found (``NMEASpeedHunt``), and remembered unless the finding says why not.
        case speedFound(Sensor, NMEASpeedHunt.Finding, Date)
        /// The port's driver said something (an ANT sensor found or lost, a refused configuration).
        case driver(Sensor, DriverNote, Date)
    }

    /// What one sensor did so far.
    public struct SensorStatus: Sendable {
        public var sensor: Sensor
        public var available: Bool
        public var decoder: DecoderCounters
        public var connection: SensorConnection.Counters
        /// Samples the engine took from this sensor, and input it refused.
        public var samplesAdded: Int
        public var refused: Int
        /// Input that arrived after the stop and was not heart rate for the recovery, or after the
        /// workout was saved: not recorded, counted.
        public var late: Int
        /// Bytes read since the last frame with a good checksum (known or not): many of them mean
        /// the port delivers no valid data (a wrong speed, a wrong protocol).
        public var bytesSinceValidFrame: Int = 0
        /// The speed hunt's state, for a port whose speed is hunted.
        public var speedHunt: NMEASpeedHunt.Status?

        /// Whether the port delivers bytes but no valid frames: at least `threshold` bytes
        /// (256: half a second of a 4800 bit/s receiver) since the last good frame, while open.
        public func deliversNoValidData(threshold: Int = 256) -> Bool {
            available && bytesSinceValidFrame >= threshold
        }
        /// Devices behind the port (ANT sensors by `ant:type:number`) and whether each delivers now.
        public var devices: [String: Bool] = [:]
    }

    private struct PortState: Sendable {
        var decoder: any SensorDecoder
        /// Devices behind the port (ANT sensors by `ant:type:number`) and whether each delivers now.
        var devices: [String: Bool] = [:]
        var samplesAdded = 0
        var refused = 0
        var late = 0
        var bytesSinceValidFrame = 0
    }

    private struct State: Sendable {
        var ports: [PortState]
        var mapper: ReadingMapper
        var lastLapEnd: Date?
        var buttonsRefused = 0
    }

    public let session: WorkoutSession
    public let sensors: [Sensor]
    private let clock: any WorkoutClock
    private let connections: [SensorConnection]
    /// The speed hunt of each port whose speed is hunted.
    private let hunts: [NMEASpeedHunt?]
    /// Each port's number among the ports of its protocol (the mapper's `receiver`: two GPS ports are two receivers).
    private let receivers: [Int]
    private let state: Mutex<State>
    /// Serialises delivery into the session, so buttons and samples of different ports keep their order.
    private let delivery = Mutex(())
    private let onEvent: @Sendable (Event) -> Void
    private let readers = Mutex<[Task<Void, Never>]>([])

    /// A recorder for `session` reading `sensors`; nothing is opened until `start`.
    ///
    /// - Parameters:
    ///   - lapLength: the pool length in metres for pool swims (lengths add that distance).
    ///   - backoff: waits between reconnect attempts.
    ///   - speedMemory: where hunted speeds are remembered (``SerialSpeedMemory``); nil: nowhere.
    ///   - huntWindow: how long a hunted port is read at one speed without a good sentence.
    ///   - onEvent: availability changes, buttons, refusals and speeds found, on a reader's thread.
    public init(
        session: WorkoutSession, sensors: [Sensor], clock: any WorkoutClock, lapLength: Double? = nil,
        backoff: SensorConnection.Backoff = .standard, speedMemory: SerialSpeedMemory? = nil,
        huntWindow: Duration = .seconds(2), onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.session = session
        self.sensors = sensors
        self.clock = clock
        self.onEvent = onEvent
        state = Mutex(
            State(
                ports: sensors.map { PortState(decoder: $0.makeDecoder()) },
                mapper: ReadingMapper(lapLength: lapLength)))
        let hunts = sensors.map { (sensor) -> NMEASpeedHunt? in
            guard sensor.huntsSpeed else { return nil }
            return NMEASpeedHunt(path: sensor.path, settings: sensor.settings, memory: speedMemory, window: huntWindow) {
                finding in onEvent(.speedFound(sensor, finding, clock.now()))
            }
        }
        self.hunts = hunts
        receivers = sensors.indices.map { index in sensors[..<index].count { $0.wire == sensors[index].wire } }
        connections = zip(sensors, hunts).map { (sensor, hunt) -> SensorConnection in
            var opener: SensorConnection.Opener?
            if let hunt { opener = { (path) throws(SensorError) -> any ByteTransport in try hunt.open(path) } }
            return SensorConnection(
                path: sensor.path, tag: sensor.wire.rawValue, settings: sensor.settings, backoff: backoff,
                now: { clock.now() }, opener: opener, driver: sensor.makeDriver())
        }
    }

    /// Opens every port and starts reading.
    ///
    /// - Throws: the first port's open error (missing, busy, no permission, not a serial device …,
    ///   naming the path); ports already opened are closed again and nothing was recorded.
    public func start() throws(SensorError) {
        for (index, connection) in connections.enumerated() {
            do {
                try connection.start()
            } catch {
                for opened in connections[..<index] { opened.stop() }
                throw error
            }
            let task = Task.detached { [self] in
                for await event in connection.events { handle(event, port: index) }
            }
            readers.withLock { $0.append(task) }
        }
    }

    /// Closes every port (the session is left as it is).
    public func stop() {
        for connection in connections { connection.stop() }
    }

    /// Every sensor's counters and availability.
    public var status: [SensorStatus] {
        let ports = state.withLock { $0.ports }
        return sensors.indices.map { index in
            SensorStatus(
                sensor: sensors[index], available: connections[index].isAvailable,
                decoder: ports[index].decoder.counters, connection: connections[index].counters,
                samplesAdded: ports[index].samplesAdded, refused: ports[index].refused, late: ports[index].late,
                bytesSinceValidFrame: ports[index].bytesSinceValidFrame, speedHunt: hunts[index]?.status,
                devices: ports[index].devices)
        }
    }

    /// Readings that could not be used (invalid GPS fixes and the like).
    public var unusableReadings: Int { state.withLock { $0.mapper.unusable } }

    private func handle(_ event: SensorConnection.Event, port: Int) {
        switch event {
        case .bytes(let chunk, let arrival):
            let readings = state.withLock { state -> [SensorReading] in
                var readings: [SensorReading] = []
                let valid = { (counters: DecoderCounters) in counters.framesDecoded &+ counters.unknownMessages }
                let before = valid(state.ports[port].decoder.counters)
                state.ports[port].decoder.decode(chunk, into: &readings)
                if valid(state.ports[port].decoder.counters) != before {
                    state.ports[port].bytesSinceValidFrame = 0
                } else {
                    state.ports[port].bytesSinceValidFrame &+= chunk.count
                }
                return readings
            }
            // Up to and including each button, then the rest: what follows a NEXT belongs to the
            // new leg, so it is mapped once that button is applied.
            var start = 0
            while start < readings.count {
                var end = start
                while end < readings.count {
                    if case .button = readings[end].value { break }
                    end += 1
                }
                let stop = Swift.min(end + 1, readings.count)
                let leg = currentLeg()
                let input = state.withLock { state -> RecordedInput in
                    var input = RecordedInput()
                    state.mapper.map(
                        readings[start..<stop], arrival: arrival, leg: leg, receiver: receivers[port], into: &input)
                    return input
                }
                if !input.isEmpty { deliver(input, port: port) }
                start = stop
            }
        case .availability(let availability):
            if case .disconnected = availability {
                state.withLock { state in
                    state.ports[port].decoder.connectionLost()
                    state.ports[port].bytesSinceValidFrame = 0
                    state.ports[port].devices = state.ports[port].devices.mapValues { _ in false }
                    state.mapper.connectionLost(sensors[port].wire, receiver: receivers[port])
                }
            }
            onEvent(.availability(sensors[port], availability, clock.now()))
        case .driver(let note):
            if let source = note.source, let available = note.available {
                state.withLock { $0.ports[port].devices[source] = available }
            }
            onEvent(.driver(sensors[port], note, clock.now()))
        }
    }

    /// The current leg's activity type (the workout's for single sports).
    private func currentLeg() -> WorkoutActivityType {
        let plan = session.plannedLegs
        if let index = session.currentLegIndex, index < plan.count { return plan[index].activityType }
        return session.configuration.activityType
    }

    private func deliver(_ input: RecordedInput, port: Int) {
        delivery.withLock { _ in
            guard let first = input.buttons.map(\.date).min() else {
                add(input.samples, input.events, input.route, port: port)
                return
            }
            // What happened before the first button goes in before it; the rest after the buttons.
            add(
                input.samples.filter { $0.start < first }, input.events.filter { $0.start < first },
                input.route.filter { $0.date < first }, port: port)
            for (button, date) in input.buttons { press(button, at: date) }
            add(
                input.samples.filter { $0.start >= first }, input.events.filter { $0.start >= first },
                input.route.filter { $0.date >= first }, port: port)
        }
    }

    private func add(_ samples: [QuantitySample], _ events: [WorkoutEvent], _ route: [RoutePoint], port: Int) {
        var samples = samples
        var events = events
        var route = route
        let sessionState = session.state
        if sessionState == .stopped || sessionState == .ended, let stop = session.stopDate {
            // After the stop: what happened before it still belongs to the workout (until it is
            // saved); heart rate after it goes to the recovery; anything else after it is late.
            let recovery = samples.filter { $0.type == .heartRate && $0.start > stop }
            let kept = session.addRecoveryHeartRate(recovery)
            let open = session.builder.state == .ended
            let before = samples.filter { $0.end <= stop }
            let eventsBefore = events.filter { $0.end <= stop }
            let routeBefore = route.filter { $0.date <= stop }
            let late =
                samples.count - before.count - recovery.count + events.count - eventsBefore.count + route.count
                - routeBefore.count + (open ? 0 : before.count + eventsBefore.count + routeBefore.count)
            state.withLock { state in
                state.ports[port].samplesAdded += kept
                state.ports[port].late += late
            }
            guard open else { return }
            samples = before
            events = eventsBefore
            route = routeBefore
        } else if sessionState != .running && sessionState != .paused {
            return
        }
        var added = 0
        var problems: [String] = []
        if !samples.isEmpty {
            do {
                added += try session.builder.add(samples).accepted
            } catch {
                problems.append(error.description)
            }
        }
        // One at a time: a refused event (a length begun before the recording) takes no other with it.
        for event in events {
            do {
                try session.builder.add([event])
            } catch {
                problems.append(error.description)
            }
        }
        if !route.isEmpty {
            do {
                try session.builder.addRoute(route)
            } catch {
                problems.append(error.description)
            }
        }
        state.withLock { state in
            state.ports[port].samplesAdded += added
            state.ports[port].refused += problems.count
        }
        for problem in problems { onEvent(.refused(sensors[port], problem)) }
    }

    /// Applies a button (from the watch or the keyboard) at `date`; if the engine refuses that
    /// instant (before an earlier change), at the clock's now.
    public func press(_ button: WatchLink.Button, at date: Date) {
        var refusal: String?
        do {
            try apply(button, at: date)
        } catch {
            do {
                try apply(button, at: Swift.max(date, clock.now()))
            } catch {
                refusal = error.description
                state.withLock { $0.buttonsRefused += 1 }
            }
        }
        onEvent(.button(button, date, refused: refusal))
    }

    private func apply(_ button: WatchLink.Button, at date: Date) throws(EngineError) {
        switch button {
        case .next where !session.plannedLegs.isEmpty:
            try session.advanceToNextLeg(at: date)
        case .lap, .next:
            // A lap runs from the end of the latest lap (a pool length is one), else from the start.
            let latestLap = session.builder.events.filter { $0.type == .lap && $0.end <= date }.map(\.end).max()
            let start = [state.withLock { $0.lastLapEnd }, latestLap].compactMap { $0 }.max() ?? session.startDate ?? date
            guard date > start else { return }
            try session.builder.add([WorkoutEvent(type: .lap, start: start, duration: date.timeIntervalSince(start))])
            state.withLock { $0.lastLapEnd = date }
        case .pause:
            try session.pause(at: date)
        case .resume:
            try session.resume(at: date)
        case .stop:
            try session.stop(at: date)
        }
    }
}
