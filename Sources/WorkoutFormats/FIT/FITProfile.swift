/// Numbers from the FIT profile that this package reads or writes.
public enum FITProfile {
    /// Global message numbers.
    public enum Message {
        public static let fileID: UInt16 = 0
        public static let sport: UInt16 = 12
        public static let session: UInt16 = 18
        public static let lap: UInt16 = 19
        public static let record: UInt16 = 20
        public static let event: UInt16 = 21
        public static let deviceInfo: UInt16 = 23
        public static let activity: UInt16 = 34
        public static let fileCreator: UInt16 = 49
        public static let length: UInt16 = 101
        public static let hr: UInt16 = 132
        public static let fieldDescription: UInt16 = 206
        public static let developerDataID: UInt16 = 207
    }

    /// `sport` values.
    public enum Sport {
        public static let generic: UInt8 = 0
        public static let running: UInt8 = 1
        public static let cycling: UInt8 = 2
        public static let transition: UInt8 = 3
        public static let swimming: UInt8 = 5
        public static let walking: UInt8 = 11
        public static let hiking: UInt8 = 17
        public static let multisport: UInt8 = 18
        public static let paddling: UInt8 = 19
        public static let standUpPaddleboarding: UInt8 = 37
        public static let kayaking: UInt8 = 41
        public static let rafting: UInt8 = 42

        /// The profile's name for a sport value (`sport 42` when this package does not know it).
        public static func name(_ value: UInt8?) -> String {
            guard let value else { return "-" }
            switch value {
            case generic: return "generic"
            case running: return "running"
            case cycling: return "cycling"
            case transition: return "transition"
            case swimming: return "swimming"
            case walking: return "walking"
            case hiking: return "hiking"
            case multisport: return "multisport"
            case paddling: return "paddling"
            case standUpPaddleboarding: return "stand_up_paddleboarding"
            case kayaking: return "kayaking"
            case rafting: return "rafting"
            default: return "sport \(value)"
            }
        }
    }

    /// `sub_sport` values.
    public enum SubSport {
        public static let generic: UInt8 = 0
        public static let treadmill: UInt8 = 1
        public static let indoorCycling: UInt8 = 6
        public static let lapSwimming: UInt8 = 17
        public static let openWater: UInt8 = 18
        public static let indoorWalking: UInt8 = 27
        /// Sub-sports done indoors.
        public static let indoor: Set<UInt8> = [treadmill, indoorCycling, indoorWalking]
    }

    /// `event` values.
    public enum Event {
        public static let timer: UInt8 = 0
        /// The device is switched off (`power_down`) or back on after a reboot or a flat battery (`power_up`).
        public static let powerDown: UInt8 = 5
        public static let powerUp: UInt8 = 6
        public static let session: UInt8 = 8
        public static let lap: UInt8 = 9
        public static let recoveryHeartRate: UInt8 = 21
        public static let activity: UInt8 = 26
        public static let length: UInt8 = 28
    }

    /// `event_type` values.
    public enum EventType {
        public static let start: UInt8 = 0
        public static let stop: UInt8 = 1
        public static let marker: UInt8 = 3
        public static let stopAll: UInt8 = 4
        public static let stopDisable: UInt8 = 8
        public static let stopDisableAll: UInt8 = 9

        /// Whether the type stops the timer.
        public static func stopsTimer(_ value: UInt8) -> Bool {
            value == stop || value == stopAll || value == stopDisable || value == stopDisableAll
        }
    }

    /// `timer_trigger` values (an event's data when the event is the timer).
    public enum TimerTrigger {
        public static let manual: UInt32 = 0
        public static let auto: UInt32 = 1
    }

    /// `swim_stroke` values.
    public enum SwimStroke {
        public static let freestyle: UInt8 = 0
        public static let backstroke: UInt8 = 1
        public static let breaststroke: UInt8 = 2
        public static let butterfly: UInt8 = 3
        public static let drill: UInt8 = 4
        public static let mixed: UInt8 = 5
        public static let im: UInt8 = 6
        public static let imByRound: UInt8 = 7
    }

    /// `length_type` values.
    public enum LengthType {
        public static let idle: UInt8 = 0
        public static let active: UInt8 = 1
    }

    /// `file` values (file_id.type).
    public enum FileType {
        public static let activity: UInt8 = 4
    }

    /// `manufacturer` values.
    public enum Manufacturer {
        public static let garmin: UInt16 = 1
        public static let suunto: UInt16 = 23
        public static let wahoo: UInt16 = 32
        public static let sigma: UInt16 = 70
        public static let development: UInt16 = 255
        public static let strava: UInt16 = 265
        public static let bryton: UInt16 = 267
        public static let hammerhead: UInt16 = 289
        public static let coros: UInt16 = 294

        /// The maker's name as people write it; nil for a number this table does not know.
        public static func name(_ value: UInt16) -> String? {
            switch value {
            case garmin: "Garmin"
            case suunto: "Suunto"
            case wahoo: "Wahoo"
            case sigma: "Sigma"
            case development: "development"
            case strava: "Strava"
            case bryton: "Bryton"
            case hammerhead: "Hammerhead"
            case coros: "COROS"
            default: nil
            }
        }
    }
}

/// The protocol's base types: size in bytes and invalid value, indexed by the type number's low 5 bits.
enum FITBaseType {
    static let enumeration: UInt8 = 0x00
    static let sint8: UInt8 = 0x01
    static let uint8: UInt8 = 0x02
    static let sint16: UInt8 = 0x83
    static let uint16: UInt8 = 0x84
    static let sint32: UInt8 = 0x85
    static let uint32: UInt8 = 0x86
    static let string: UInt8 = 0x07
    static let float32: UInt8 = 0x88
    static let float64: UInt8 = 0x89
    static let uint8z: UInt8 = 0x0A
    static let uint16z: UInt8 = 0x8B
    static let uint32z: UInt8 = 0x8C
    static let byte: UInt8 = 0x0D
    static let sint64: UInt8 = 0x8E
    static let uint64: UInt8 = 0x8F
    static let uint64z: UInt8 = 0x90

    /// Element size by index (type & 0x1F); unknown indices read as bytes.
    static let sizes: [Int] = [1, 1, 1, 2, 2, 4, 4, 1, 4, 8, 1, 2, 4, 1, 8, 8, 8]

    /// How each index is interpreted.
    enum Kind: UInt8, Sendable { case unsigned, signed, float, zeroInvalid, bytes, string }
    static let kinds: [Kind] = [
        .unsigned, .signed, .unsigned, .signed, .unsigned, .signed, .unsigned, .string, .float, .float,
        .zeroInvalid, .zeroInvalid, .zeroInvalid, .bytes, .signed, .unsigned, .zeroInvalid,
    ]

    /// The normalised index of a base type byte: 0…16, or 13 (byte) for unknown types.
    @inline(__always)
    static func index(_ type: UInt8) -> UInt8 {
        let index = type & 0x1F
        return index <= 16 ? index : 13
    }
}
