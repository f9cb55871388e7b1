import ArgumentParser
import Foundation
import WorkoutSensors

/// The options every command that drives a USB ANT stick takes (`record`, `sensors scan`).
struct ANTOptions: ParsableArguments {
    /// The environment variable holding the ANT+ network key.
    static let environmentVariable = "WORKOUT_ANT_NETWORK_KEY"

    @Option(
        name: .customLong("ant-network-key"),
        help: ArgumentHelp(
            "The ANT+ network key, 16 hex digits (default: $WORKOUT_ANT_NETWORK_KEY; docs/ant-sensors.md says where to get it).",
            valueName: "hex"))
    var networkKey: String?
    @Option(
        help: ArgumentHelp("Wheel circumference for ANT+ bike speed and distance, metres (default 2.105, 700×25c).", valueName: "m"))
    var wheelCircumference: Double = 2.105

    /// The key from the option, else the environment; a missing or malformed key is a typed error.
    func key(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ANTHostError) -> ANTNetworkKey {
        guard let text = networkKey ?? environment[Self.environmentVariable], !text.isEmpty else {
            throw .missingNetworkKey
        }
        return try ANTNetworkKey(hex: text)
    }

    /// Checks what can be checked without a port: the circumference, and a key given as an option.
    func validate() throws {
        guard wheelCircumference.isFinite, wheelCircumference >= 0.5, wheelCircumference <= 4 else {
            throw ValidationError("--wheel-circumference must be 0.5...4 m, got \(wheelCircumference)")
        }
        if let networkKey {
            do {
                _ = try ANTNetworkKey(hex: networkKey)
            } catch {
                throw ValidationError("--ant-network-key: \(error.description)")
            }
        }
    }

    /// Gives every `ant` sensor its host plan (the key, its pins) and the wheel circumference. Throws
    /// before any port is opened when an ANT sensor is named and the key is missing or malformed.
    func configure(_ sensors: inout [SensorRecorder.Sensor], pins: [String: ANTPins], timeScale: Double) throws {
        guard sensors.contains(where: { $0.wire == .ant }) else { return }
        let key: ANTNetworkKey
        do {
            key = try self.key()
        } catch {
            throw UserFacingError("cannot record: \(error.description)")
        }
        for index in sensors.indices where sensors[index].wire == .ant {
            let spec = pins[sensors[index].path] ?? ANTPins()
            // Reopen waits run on the recording's time (faster when a simulator plays faster).
            let scale = timeScale.isFinite && timeScale > 0 ? timeScale : 1
            sensors[index].ant = ANTHostPlan(
                networkKey: key, profiles: spec.profiles ?? ANTProfile.allCases, pinned: spec.pinned,
                searchTimeout: spec.searchTimeout ?? 12, reopenInitial: 0.25 / scale, reopenMaximum: 1 / scale)
            sensors[index].wheelCircumference = wheelCircumference
        }
    }
}

/// What a `--sensor PATH:ant:OPTIONS` spec says: device numbers pinned per profile, the profiles to
/// open, the search timeout.
///
/// `hr=4711,power=1234` pins devices (profiles: hr, power, sc, stride, fe, speed, cadence);
/// `only=hr+power` opens only those profiles (pinned ones are always opened); `search=30` sets the
/// search timeout in seconds (2.5 s steps, `search=never` searches without end).
struct ANTPins: Sendable, Equatable {
    var pinned: [ANTProfile: UInt16] = [:]
    var profiles: [ANTProfile]?
    var searchTimeout: UInt8?

    init() {}

    /// Whether the spec asks for fitness equipment (pinned, or among `only`): a recording from a
    /// trainer or treadmill is indoor.
    var meansTrainer: Bool {
        pinned[.fitnessEquipment] != nil || (profiles?.contains(.fitnessEquipment) ?? false)
    }

    init(parsing text: String) throws(ANTHostError) {
        for item in text.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { throw .invalidSpec(spec: text, detail: "'\(item)' is not NAME=VALUE") }
            let (name, value) = (parts[0], parts[1])
            switch name.lowercased() {
            case "only":
                var wanted: [ANTProfile] = []
                for profileName in value.split(separator: "+") {
                    guard let profile = ANTProfile(name: String(profileName)) else {
                        throw .invalidSpec(spec: text, detail: "unknown profile '\(profileName)'")
                    }
                    wanted.append(profile)
                }
                profiles = wanted
            case "search":
                if value.lowercased() == "never" {
                    searchTimeout = 255
                } else if let seconds = Double(value), seconds.isFinite, seconds >= 2.5, seconds <= 632.5 {
                    searchTimeout = UInt8((seconds / 2.5).rounded(.up))
                } else {
                    throw .invalidSpec(spec: text, detail: "search=\(value) must be 2.5...632.5 seconds or never")
                }
            default:
                guard let profile = ANTProfile(name: name) else {
                    throw .invalidSpec(spec: text, detail: "unknown profile '\(name)'")
                }
                guard let number = UInt16(value), number > 0 else {
                    throw .invalidSpec(spec: text, detail: "\(name)=\(value): a device number is 1...65535")
                }
                pinned[profile] = number
            }
        }
    }

    /// Splits `PATH:ant:OPTIONS[@SETTINGS]` into `PATH:ant[@SETTINGS]` and the options; other specs
    /// come back unchanged with nil.
    static func split(_ spec: String) -> (spec: String, options: String?) {
        var body = spec
        var settings = ""
        if let at = spec.lastIndex(of: "@") {
            body = String(spec[..<at])
            settings = String(spec[at...])
        }
        guard let colon = body.lastIndex(of: ":") else { return (spec, nil) }
        let last = body[body.index(after: colon)...]
        let head = body[..<colon]
        guard last.contains("="), head.lowercased().hasSuffix(":ant") else { return (spec, nil) }
        return (String(head) + settings, String(last))
    }
}

extension RecordCommand {
    /// The ANT options of each `PATH:ant:OPTIONS` spec, by path.
    static func antPins(_ specs: [String]) throws -> [String: ANTPins] {
        var pins: [String: ANTPins] = [:]
        for spec in specs {
            let (base, options) = ANTPins.split(spec)
            guard let options, let colon = base.lastIndex(of: ":") else { continue }
            let path = String(base[..<colon])
            do {
                pins[path] = try ANTPins(parsing: options)
            } catch {
                throw ValidationError("--sensor \(path): \(error.description)")
            }
        }
        return pins
    }
}

/// `workout sensors`: what is in range.
struct SensorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sensors", abstract: "Find the sensors in range of a USB ANT stick.",
        subcommands: [Scan.self])

    /// `workout sensors scan PATH:ant [--seconds N]`: every ANT+ device the stick hears.
    struct Scan: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the ANT+ devices in range: profile, device number, manufacturer, product, a first value.",
            discussion: """
                Configures the stick for continuous scan (one channel hears every ANT+ device on the ANT+ \
                frequency, with device ids), listens for --seconds, then lists what it heard. Pin a device with \
                --sensor PATH:ant:hr=NUMBER when recording, so a second strap in the room never mixes in.
                """)

        @Argument(help: ArgumentHelp("The stick: PATH:ant[@SETTINGS], e.g. /dev/ttyUSB0:ant.", valueName: "spec"))
        var spec: String
        @Option(help: ArgumentHelp("How long to listen.", valueName: "s")) var seconds: Double = 10
        @OptionGroup var ant: ANTOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard seconds.isFinite, seconds > 0, seconds <= 3600 else {
                throw ValidationError("--seconds must be 0...3600, got \(seconds)")
            }
            _ = try RecordCommand.parseSensors([spec])
        }

        func run() throws {
            guard let sensor = try RecordCommand.parseSensors([spec]).first, sensor.wire == .ant else {
                throw ValidationError("scan needs an ANT stick: PATH:ant")
            }
            let key: ANTNetworkKey
            do {
                key = try ant.key()
            } catch {
                throw UserFacingError("cannot scan: \(error.description)")
            }
            let found = try ANTScan.run(
                path: sensor.path, settings: sensor.settings, key: key, seconds: seconds,
                circumference: ant.wheelCircumference,
                onNote: { note in
                    if note.problem { FileHandle.standardError.write(Data("\(sensor.path): \(note.text)\n".utf8)) }
                })
            if output.json {
                let rows = found.map { device -> [String: String] in
                    [
                        "profile": device.profile, "deviceNumber": "\(device.id.number)", "deviceType": "\(device.id.type)",
                        "source": device.id.description, "manufacturer": device.manufacturer ?? "",
                        "product": device.product ?? "", "firstValue": device.firstValue ?? "",
                    ]
                }
                let data = try JSONSerialization.data(withJSONObject: rows, options: [.sortedKeys])
                emitLine(String(decoding: data, as: UTF8.self))
                return
            }
            if found.isEmpty {
                emitLine("no ANT+ device heard in \(Int(seconds)) s (is the sensor awake? a strap needs skin contact)")
                return
            }
            for device in found {
                emitLine(
                    [
                        device.profile, "device \(device.id.number)", device.id.description,
                        device.manufacturer ?? "manufacturer ?", device.product ?? "product ?", device.firstValue ?? "-",
                    ].joined(separator: "  "))
            }
            emitLine("pin one when recording: --sensor \(sensor.path):ant:hr=NUMBER,power=NUMBER")
        }
    }
}
