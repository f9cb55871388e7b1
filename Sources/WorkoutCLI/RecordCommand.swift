import ArgumentParser
import Foundation
import Synchronization
import WorkoutEngine
import WorkoutModel
import WorkoutSensors
import WorkoutStore
import WorkoutUpload

#if canImport(Glibc)
    import Glibc
#endif

/// `workout record --sensor PATH:PROTOCOL … --activity TYPE`: a live session from serial sensors.
struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record", abstract: "Record a workout from serial sensors (GPS, ANT+, a watch).",
        discussion: """
            Opens every --sensor port (PATH:PROTOCOL with PROTOCOL nmea, ant or watch, optionally \
            @SETTINGS such as /dev/ttyACM0:nmea@9600,8N1), starts a journaled session and records until \
            the watch's STOP button, the s key, or Ctrl-C / SIGTERM. A sensor that disappears is marked \
            unavailable and reopened with back-off while the session goes on. After the stop the heart \
            rate of the recovery window is collected (Ctrl-C again skips it), the workout is saved and \
            the heart-rate recovery attached. Keys (when standard input is a terminal): n next leg (a lap \
            in single sports), l lap, p pause/resume, s stop.

            With --upload URL --token T the session also streams live to a `workout serve` server: each \
            local commit (every second) becomes the next numbered batch. A server that is away never stops \
            or slows the recording: batches wait, are sent again with back-off and the server catches up \
            on reconnect. At the end the command waits up to --upload-wait seconds for the server to take \
            the rest; what it did not take is kept beside the store and `workout push ID` sends it. Exit \
            status 3: the workout is saved locally but the upload was refused (a wrong token, say) or is \
            incomplete.
            """)

    @Option(
        name: .customLong("sensor"),
        help: ArgumentHelp("A sensor port: PATH:PROTOCOL[@SETTINGS] (nmea, ant, watch); repeat for several.",
            valueName: "spec"))
    var sensors: [String] = []
    @Option(help: ArgumentHelp("What is recorded: \(Parse.activityTypeNames).", valueName: "type"))
    var activity: String
    @Option(help: ArgumentHelp("Pool length in metres for pool swims (lengths come from the watch).", valueName: "m"))
    var lapLength: Double?
    @Flag(help: "Auto-pause when the athlete stops (cycling < 1 m/s, running < 0.5 m/s, for 3 s).")
    var autoPause = false
    @Option(help: ArgumentHelp("Seconds of heart rate collected after the stop for the recovery (0: none).", valueName: "s"))
    var recovery: Double = 130
    @Option(
        help: ArgumentHelp(
            "Race seconds per wall second, for sensors a simulator plays faster than real time (watch-sim --speed).",
            valueName: "rate"))
    var timeScale: Double = 1
    @Option(help: .hidden) var commitInterval: Double = 1
    @Option(
        help: ArgumentHelp(
            "Also stream the session live to a `workout serve` server, e.g. http://127.0.0.1:8080.", valueName: "url"))
    var upload: String?
    @Option(help: ArgumentHelp("The athlete's token for --upload (`workout athletes add` printed it).", valueName: "token"))
    var token: String?
    @Option(
        help: ArgumentHelp(
            "Seconds to wait at the end for the server to take the rest of the upload (default 30).", valueName: "s"))
    var uploadWait: Double = 30
    @OptionGroup var ant: ANTOptions
    @OptionGroup var store: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if sensors.isEmpty { throw ValidationError("name at least one --sensor PATH:PROTOCOL (nmea, ant or watch)") }
        _ = try Self.parseSensors(sensors)
        _ = try Self.antPins(sensors)
        _ = try Parse.activityType(activity)
        if let lapLength, !(lapLength.isFinite && lapLength >= 10 && lapLength <= 100) {
            throw ValidationError("--lap-length must be 10...100 m, got \(lapLength)")
        }
        guard recovery.isFinite, recovery >= 0, recovery <= 3600 else {
            throw ValidationError("--recovery must be 0...3600 s, got \(recovery)")
        }
        guard timeScale.isFinite, timeScale >= 0.01, timeScale <= 10_000 else {
            throw ValidationError("--time-scale must be 0.01...10000, got \(timeScale)")
        }
        _ = try uploadTarget()
        guard uploadWait.isFinite, uploadWait >= 0, uploadWait <= 3600 else {
            throw ValidationError("--upload-wait must be 0...3600 s, got \(uploadWait)")
        }
    }

    /// The server of `--upload` with its `--token`; nil without `--upload`.
    func uploadTarget() throws -> UploadTarget? {
        guard let upload else {
            if token != nil { throw ValidationError("--token goes with --upload URL") }
            return nil
        }
        guard let token, !token.isEmpty else { throw ValidationError("--upload needs --token (the athlete's token)") }
        guard let target = UploadTarget(server: upload, token: token) else {
            throw ValidationError("--upload '\(upload)' is not an http:// or https:// server address")
        }
        return target
    }

    /// Parses `PATH:PROTOCOL[@SETTINGS]`; the protocol follows the last colon (paths may contain colons).
    static func parseSensors(_ specs: [String]) throws -> [SensorRecorder.Sensor] {
        try specs.map { spec in
            let spec = ANTPins.split(spec).spec  // PATH:ant:hr=4711 → PATH:ant (antPins reads the rest)
            guard let colon = spec.lastIndex(of: ":"), colon != spec.startIndex else {
                throw ValidationError("--sensor '\(spec)' needs PATH:PROTOCOL, e.g. /dev/ttyUSB0:ant")
            }
            let path = String(spec[..<colon])
            var rest = String(spec[spec.index(after: colon)...])
            var settings = SerialSettings.standard
            var speedGiven = false
            if let at = rest.firstIndex(of: "@") {
                let text = String(rest[rest.index(after: at)...])
                speedGiven = SerialSettings.specifiesSpeed(text)
                rest = String(rest[..<at])
                do {
                    settings = try SerialSettings(parsing: text)
                } catch {
                    throw ValidationError("--sensor \(path): \(String(describing: error))")
                }
            }
            guard let wire = SensorProtocol(rawValue: rest.lowercased()) else {
                throw ValidationError(
                    "--sensor \(path): unknown protocol '\(rest)'; use one of "
                        + SensorProtocol.allCases.map(\.rawValue).joined(separator: ", "))
            }
            // An nmea port without a speed has it hunted (NMEASpeedHunt).
            return SensorRecorder.Sensor(path: path, wire: wire, settings: settings, huntsSpeed: !speedGiven)
        }
    }

    func run() throws {
        var sensors = try Self.parseSensors(self.sensors)
        try ant.configure(&sensors, pins: try Self.antPins(self.sensors), timeScale: timeScale)
        let type = try Parse.activityType(activity)
        let trainer = try Self.antPins(self.sensors).values.contains(where: \.meansTrainer)  // indoor
        let configuration = WorkoutConfiguration(
            activityType: type, locationType: lapLength == nil ? (trainer ? .indoor : .outdoor) : .unknown,
            swimmingLocationType: lapLength == nil ? (type == .swimming || type == .swimBikeRun ? .openWater : .unknown)
                : .pool,
            lapLength: lapLength.map { Quantity($0, .meter) })
        let database = try store.open()
        try Self.saveInterruptedRecording(in: database, json: output.json)
        let clock: any WorkoutClock = timeScale == 1 ? SystemClock() : ScaledClock(rate: timeScale)
        var options = BuilderOptions(autoPause: autoPause ? .standard : nil)
        options.heartRateRecovery.enabled = recovery > 0
        options.heartRateRecovery.window = recovery
        var uploader: LiveUploader?
        if let target = try uploadTarget() {
            // The server's session has the local workout's id: both are the same workout.
            let id = UUID()
            options.workoutID = id
            uploader = LiveUploader(
                target: target, session: id, setup: SessionSetup(configuration),
                plannedLegs: configuration.plannedLegs.map(\.activityType)
            ) { [json = output.json, server = target.server.absoluteString] event in
                switch event {
                case .connected(let last):
                    Self.say("upload: \(server) answers" + (last > 0 ? ", resuming after batch \(last)" : ""), json: json)
                case .unreachable(let problem):
                    Self.say("upload: \(problem); recording goes on, batches wait and are sent again", json: json)
                case .refused(let problem):
                    FileHandle.standardError.write(
                        Data("upload stopped: \(problem); recording goes on, saved locally only\n".utf8))
                }
            }
        }
        var observer: CommitObserver?
        if let uploader { observer = { changes in uploader.committed(changes) } }
        let recording = try userFacing { () throws(StoreError) in
            try database.beginRecording(
                configuration: configuration, clock: clock, options: options, commitInterval: commitInterval,
                observer: observer)
        }
        let interactive = isatty(STDERR_FILENO) == 1 && !output.json
        // Reconnect back-off runs on the recording's time: faster when a simulator plays faster.
        let backoff = SensorConnection.Backoff(
            initial: .milliseconds(Int(min(max(100 / timeScale, 1), 10_000))), multiplier: 2,
            maximum: .milliseconds(Int(min(max(5000 / timeScale, 10), 500_000))))
        let recorder = SensorRecorder(
            session: recording.session, sensors: sensors, clock: clock, lapLength: lapLength, backoff: backoff,
            speedMemory: SerialSpeedMemory(file: SerialSpeedMemory.defaultFile())
        ) { [json = output.json] event in
            Self.report(event, json: json)
        }
        do {
            try recording.session.start(at: clock.now())
            try recorder.start()
        } catch let error as SensorError {
            try? recording.discard()
            throw UserFacingError("cannot record: \(error.description)")
        } catch {
            try? recording.discard()
            throw UserFacingError(error)
        }
        uploader?.start()
        let (stops, signalSources) = Self.installSignalHandlers()
        defer {
            for source in signalSources { source.cancel() }
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        let keys = Keyboard.start(recorder: recorder, clock: clock)
        defer { keys?.restore() }

        var saved: Workout?
        var requestsAtSave = 0
        var result: HeartRateRecoveryResult?
        var lastDraw = Date.distantPast
        let session = recording.session
        while result == nil {
            Thread.sleep(forTimeInterval: 0.05)
            let requests = stops.value + (keys?.stopRequests ?? 0)
            if requests > 0, session.state == .running || session.state == .paused {
                recorder.press(.stop, at: clock.now())
            }
            if saved == nil, session.state == .stopped || session.state == .ended, let stop = session.stopDate {
                if session.state == .stopped { try? session.end(at: max(clock.now(), stop)) }
                // Data of the last seconds before the stop may still be on its way (a GPS fix, a
                // sensor page): keep taking it for the builder's reorder window, then save.
                guard clock.now() >= stop.addingTimeInterval(2) || requests >= 2 else { continue }
                let workout = try userFacing { () throws(StoreError) in try recording.finish() }
                saved = workout
                requestsAtSave = requests
                uploader?.requestFinish()
                Self.say("saved \(workout.id)", json: output.json)
                if let end = session.heartRateRecoveryWindowEnd, !output.json {
                    Self.say("collecting heart-rate recovery until \(Format.timestamp(end)) (Ctrl-C skips)")
                }
            }
            if let workout = saved {
                let end = session.heartRateRecoveryWindowEnd
                // Ctrl-C (or s) once the workout is saved skips the rest of the window; SIGTERM counts twice.
                let skip = requests > requestsAtSave || requests >= 2
                if end == nil || clock.now() >= (end ?? .distantPast) || skip {
                    let recovery: HeartRateRecoveryResult
                    do {
                        recovery = try session.finishHeartRateRecovery(at: clock.now())
                    } catch {
                        throw UserFacingError(error)
                    }
                    try userFacing { () throws(StoreError) in
                        try database.attachHeartRateRecovery(recovery, toWorkout: workout.id)
                    }
                    result = recovery
                }
            }
            if interactive, Date().timeIntervalSince(lastDraw) >= 1 {
                lastDraw = Date()
                Self.draw(session: session, recorder: recorder, clock: clock)
            }
        }
        recorder.stop()
        if interactive { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        guard var workout = saved else { return }
        if let result { workout.metadata.merge(result.workoutMetadata) { _, new in new } }
        let uploaded = try uploader.map { uploader in
            let requests = stops.value + (keys?.stopRequests ?? 0)
            // Ctrl-C or SIGTERM while waiting for the server: the rest goes to the spool at once.
            return try Self.endUpload(
                uploader, workout: workout.id, database: database, json: output.json, wait: uploadWait
            ) { stops.value + (keys?.stopRequests ?? 0) > requests }
        }
        if output.json {
            emitLine(try Format.json(workout))
            if uploaded == false { throw ExitCode(3) }
            return
        }
        emitLine(Format.workoutDetail(workout).joined(separator: "\n"))
        emitLine("")
        for status in recorder.status {
            let decoder = status.decoder
            emitLine(
                "sensor \(status.sensor.wire) \(status.sensor.path): \(status.samplesAdded) samples, "
                    + "\(decoder.framesDecoded) frames, \(decoder.badChecksums) bad checksums, "
                    + "\(decoder.malformedFrames + decoder.oversizedFrames + decoder.unsupportedVersions) malformed, "
                    + "\(decoder.resyncBytesSkipped) bytes skipped, \(status.connection.disconnects) disconnects, "
                    + "\(status.refused) refused, \(status.late) late")
        }
        // Every drop has a counter the user sees.
        let unusable = recorder.unusableReadings
        let failures = recording.session.detectorFailures
        if unusable > 0 || failures > 0 {
            emitLine("\(unusable) readings unusable (invalid fix, bogus device time), \(failures) detected changes refused")
        }
        emitLine("saved \(workout.id) to \(database.path)")
        if uploaded == false { throw ExitCode(3) }
    }

    /// Waits for the server to take the rest and finish its session; says how it ended. False when the upload
    /// was refused or is incomplete (its rest is then spooled for `workout push`).
    static func endUpload(
        _ uploader: LiveUploader, workout id: UUID, database: WorkoutStore, json: Bool, wait: TimeInterval,
        interrupted: () -> Bool
    ) throws -> Bool {
        let server = uploader.target.server.absoluteString
        if uploader.reachable != true, !json {
            say("upload: waiting up to \(Int(wait)) s for \(server) to take the rest (Ctrl-C stops waiting)")
        }
        let outcome = uploader.waitForOutcome(timeout: wait, giveUp: interrupted)
        let route = uploader.routePointsNotSent
        if route > 0 {
            say("upload: \(route) route points stay local (the live wire format has no route)", json: json)
        }
        switch outcome {
        case .finished(let batches):
            say("uploaded \(id) to \(server) (\(batches) batches)", json: json)
            return true
        case .refused(let problem):
            FileHandle.standardError.write(
                Data("the upload to \(server) was refused (\(problem)); \(id) is saved locally only\n".utf8))
            return false
        case .incomplete(let acknowledged, let pending, let problem):
            try UploadSpoolFiles.write(uploader.spool(), store: database)
            FileHandle.standardError.write(
                Data(
                    ("the server at \(server) has \(acknowledged) batches of \(id); \(pending) more did not reach it"
                        + (problem.map { " (\($0))" } ?? "") + ". The workout is saved locally; send the rest with: "
                        + "workout push \(id) --to \(server) --token TOKEN --db \(database.path)\n").utf8))
            return false
        }
    }

    /// Saves a recording a previous run left in the journal (killed, crashed, power lost): recovered
    /// as it was, stopped at its last data, saved, and reported.
    static func saveInterruptedRecording(in database: WorkoutStore, json: Bool) throws {
        let recovered: JournaledRecording?
        do {
            recovered = try database.recoverActiveSession()
        } catch {
            throw UserFacingError("cannot recover the interrupted recording in \(database.path): \(error)")
        }
        guard let recovered else { return }
        let session = recovered.session
        let end = session.builder.latestDataDate ?? session.startDate ?? Date()
        do {
            if session.state == .running || session.state == .paused { try session.stop(at: max(end, session.startDate ?? end)) }
            if session.state == .stopped { try session.end(at: session.stopDate ?? end) }
            let workout = try recovered.finish()
            say("recovered an interrupted recording: saved \(workout.id)", json: json)
        } catch {
            throw UserFacingError("cannot save the interrupted recording in \(database.path): \(error)")
        }
    }

    /// A progress line: on standard output, or standard error when standard output carries JSON.
    private static func say(_ line: String, json: Bool = false) {
        if json {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            emitLine(line)
        }
    }

    private static func report(_ event: SensorRecorder.Event, json: Bool) {
        switch event {
        case .availability(let sensor, let availability, _):
            say("sensor \(sensor.wire) \(sensor.path) \(availability)", json: json)
        case .button(let button, _, let refused):
            say("button \(button.rawValue)" + (refused.map { " refused: \($0)" } ?? ""), json: json)
        case .refused(let sensor, let problem):
            FileHandle.standardError.write(Data("sensor \(sensor.wire) \(sensor.path): \(problem)\n".utf8))
        case .speedFound(let sensor, let finding, _):
            say(speedFoundLine(sensor, finding), json: json)
        case .driver(let sensor, let note, _):
            if note.problem {
                FileHandle.standardError.write(Data("sensor \(sensor.wire) \(sensor.path): \(note.text)\n".utf8))
            } else if note.available != nil || note.text.hasPrefix("ANT stick configured") {
                say("sensor \(sensor.wire) \(sensor.path): \(note.text)", json: json)
            }
        }
    }

    /// The log line of a hunted speed found: `sensor nmea PATH: 4800 bit/s found (remembered in FILE for DEVICE)`.
    static func speedFoundLine(_ sensor: SensorRecorder.Sensor, _ finding: NMEASpeedHunt.Finding) -> String {
        var line = "sensor \(sensor.wire) \(sensor.path): \(finding.speed) bit/s found"
        if let file = finding.rememberedIn {
            line += " (remembered in \(file) for \(finding.device); give @SPEED to skip the hunt)"
        } else if let problem = finding.memoryProblem {
            line += "; \(problem)"
        }
        return line
    }

    /// One sensor in the live status line: `nmea+` (open, valid data), `nmea-` (away), the speed
    /// hunt while it runs, or "no valid data" with what to try when bytes come but no good frame.
    static func liveStatus(_ status: SensorRecorder.SensorStatus) -> String {
        let sensor = status.sensor
        guard status.available else { return "\(sensor.wire)-" }
        if case .trying(let speed)? = status.speedHunt {
            return "\(sensor.wire): hunting the speed (\(speed) bit/s)"
        }
        if status.deliversNoValidData() {
            let hint: String
            switch sensor.wire {
            case .nmea:
                // Never the speed in use: the one found by a hunt, else the one given.
                var current = sensor.settings.baudRate
                if case .found(let speed)? = status.speedHunt { current = speed }
                let other = current == 4800 ? 9600 : 4800
                hint = "wrong speed? try \(sensor.path):nmea@\(other) or omit the speed to hunt"
            case .ant:
                hint = "not an ANT stick? check `workout ports`"
            case .watch:
                hint = "wrong speed or protocol? try \(sensor.path):watch@SPEED"
            }
            return "\(sensor.wire): no valid data (\(hint))"
        }
        if case .found(let speed)? = status.speedHunt { return "\(sensor.wire)@\(speed)+" }
        return "\(sensor.wire)+"
    }

    /// SIGINT and SIGTERM stop the session gracefully; the counter tells how many arrived. Keep the
    /// returned sources alive while recording.
    private static func installSignalHandlers() -> (StopCounter, [any DispatchSourceSignal]) {
        let count = StopCounter()
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                // SIGTERM asks to finish now: count it twice (stop, and skip the recovery window).
                count.add(number == SIGTERM ? 2 : 1)
            }
            source.resume()
            return source
        }
        return (count, sources)
    }

    /// The live status line: state, elapsed, leg, heart rate, speed or pace, power, sensors.
    private static func draw(session: WorkoutSession, recorder: SensorRecorder, clock: any WorkoutClock) {
        let now = clock.now()
        let workout = session.builder.snapshot(at: now)
        let activity = workout.activities.last { $0.end == nil }
        let type = activity?.configuration.activityType ?? workout.activityType
        let statistics = activity?.statistics ?? workout.statistics
        var parts = [session.state.rawValue, Format.duration(workout.elapsed)]
        if let index = session.currentLegIndex {
            parts.append("leg \(index + 1)/\(session.plannedLegs.count) \(type.rawValue)")
        }
        parts.append("HR " + Format.whole(workout.statistics[.heartRate]?.mostRecent?.value, "bpm"))
        let speed = [QuantityType.cyclingSpeed, .runningSpeed].compactMap { statistics[$0]?.mostRecent?.value }.first
        if let speed {
            parts.append(
                type == .running || type == .walking
                    ? (speed > 0.3 ? Format.minutesSeconds(1000 / speed) + " /km" : "-") : String(format: "%.1f km/h", speed * 3.6))
        }
        if let power = statistics[.cyclingPower]?.mostRecent?.value { parts.append(Format.whole(power, "W")) }
        parts.append(recorder.status.map(liveStatus).joined(separator: " "))
        FileHandle.standardError.write(Data(Format.progressLine(parts.joined(separator: "  ")).utf8))
    }
}

/// How many stop requests (signals) arrived.
final class StopCounter: Sendable {
    private let count = Mutex(0)
    func add(_ value: Int) { count.withLock { $0 += value } }
    var value: Int { count.withLock { $0 } }
}

/// Single-key commands from a terminal on standard input (raw mode while recording).
final class Keyboard: Sendable {
    private let saved: termios
    private let stops = Mutex(0)

    private init(saved: termios) { self.saved = saved }

    /// Starts reading keys when standard input is a terminal; nil otherwise.
    static func start(recorder: SensorRecorder, clock: any WorkoutClock) -> Keyboard? {
        // Only in the foreground: a background job touching the terminal would be stopped (SIGTTIN/SIGTTOU).
        guard isatty(STDIN_FILENO) == 1, tcgetpgrp(STDIN_FILENO) == getpgrp() else { return nil }
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return nil }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return nil }
        let keyboard = Keyboard(saved: original)
        let thread = Thread {
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 {
                let session = recorder.session
                switch byte {
                case UInt8(ascii: "n"): recorder.press(.next, at: clock.now())
                case UInt8(ascii: "l"): recorder.press(.lap, at: clock.now())
                case UInt8(ascii: "p"): recorder.press(session.state == .paused ? .resume : .pause, at: clock.now())
                case UInt8(ascii: "s"): keyboard.stops.withLock { $0 += 1 }
                default: break
                }
            }
        }
        thread.start()
        return keyboard
    }

    /// How many times `s` was pressed.
    var stopRequests: Int { stops.withLock { $0 } }

    /// Puts the terminal back as it was.
    func restore() {
        var original = saved
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
    }
}
