// Typed readings that the streaming decoders yield. Pure Swift (no Foundation) so the fuzz targets can
// compile the decoders on their own; `Date` conveniences live in ReadingDates.swift.

/// One decoded reading: where it came from, the time the protocol itself gave it, and its value.
///
/// Decoders do not stamp arrival times: every reading appended by one `decode` call came from that
/// call's chunk, so a recorder stamps `readings[countBefore...]` with the chunk's arrival time.
public struct SensorReading: Sendable, Equatable {
    /// The protocol, and for ANT the channel and device, the reading came from.
    public var source: ReadingSource
    /// The time the protocol carries with the reading (NMEA UTC, watch-link milliseconds), if any.
    /// ANT messages carry no clock: their event times (1/1024 s, rolling over) are in the values.
    public var time: SensorTime?
    /// What was measured or signalled.
    public var value: Value

    @inline(__always)
    public init(source: ReadingSource, time: SensorTime? = nil, value: Value) {
        self.source = source
        self.time = time
        self.value = value
    }

    /// What a reading measured or signalled.
    public enum Value: Sendable, Equatable {
        /// A GPS fix or record (NMEA GGA or RMC).
        case fix(GPSFix)
        /// Heart rate (ANT+ heart-rate pages, GATT 0x2A37).
        case heartRate(HeartRateReading)
        /// Bike speed and/or cadence (ANT+ 121/122/123, GATT 0x2A5B).
        case speedCadence(SpeedCadenceReading)
        /// Bicycle power (ANT+ 11 pages 0x10 and 0x12, GATT 0x2A63).
        case power(PowerReading)
        /// Running speed, cadence and distance (ANT+ foot pod 124, GATT 0x2A53).
        case stride(StrideReading)
        /// A pool length or a rest at the wall (watch-link `LEN`).
        case swimLength(SwimLength)
        /// Strokes counted over an interval (watch-link `STK`).
        case strokes(StrokeCount)
        /// Distance the watch measured over an interval (watch-link `DST`).
        case distance(WatchDistance)
        /// A button press (watch-link `BTN`).
        case button(WatchLink.Button)
        /// The watch introduced itself (watch-link `HELLO`).
        case hello(device: String)
        /// An ANT channel-id response (0x51): which device a channel is paired with.
        case antChannelID(ANTDeviceID)
        /// An ANT channel event or command response (0x40).
        case antChannelEvent(messageID: UInt8, code: UInt8)
        /// The ANT chip (re)started (0x6F); the bits give the reason (0 = power-on reset).
        case antStartup(reason: UInt8)
        /// The ANT chip reported a serial error (0xAE) for a message the host sent.
        case antSerialError(code: UInt8)
        /// Who made an ANT+ device and what it is (common pages 80 and 81, heart-rate pages 2 and 3).
        case antDeviceInfo(ANTDeviceInfo)
        /// ANT+ fitness equipment (FE-C, device type 17): a smart trainer, a treadmill, a rower …
        case fitnessEquipment(FitnessEquipmentReading)
    }
}

extension SensorReading {
    /// The GPS fix, if this is one.
    public var fix: GPSFix? { if case .fix(let value) = value { value } else { nil } }
    /// The heart-rate reading, if this is one.
    public var heartRate: HeartRateReading? { if case .heartRate(let value) = value { value } else { nil } }
    /// The speed and cadence reading, if this is one.
    public var speedCadence: SpeedCadenceReading? { if case .speedCadence(let value) = value { value } else { nil } }
    /// The power reading, if this is one.
    public var power: PowerReading? { if case .power(let value) = value { value } else { nil } }
    /// The stride reading, if this is one.
    public var stride: StrideReading? { if case .stride(let value) = value { value } else { nil } }
}

/// Where a reading came from.
public enum ReadingSource: Sendable, Hashable {
    /// An NMEA 0183 sentence from a GPS receiver, with its talker (`GP`, `GN`, …).
    case nmea(talker: NMEATalker)
    /// An ANT message on `channel` (nil for the chip's own messages: startup, serial errors); `device`
    /// is the channel's device when a channel-id response (or the decoder's configuration, or an
    /// extended message) told it.
    case ant(channel: UInt8?, device: ANTDeviceID?)
    /// A watch-link message of the watch itself (lengths, strokes, buttons, hello).
    case watchLink
    /// A BLE GATT characteristic value (UUID16) tunnelled in a watch-link `GATT` line.
    case watchLinkGATT(characteristic: UInt16)
}

/// The two-letter talker of an NMEA sentence (`GP` GPS, `GN` multi-constellation, `GL` GLONASS…).
public struct NMEATalker: Sendable, Hashable, CustomStringConvertible {
    /// The two ASCII letters, first in the high byte.
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public init(_ first: UInt8, _ second: UInt8) { rawValue = UInt16(first) << 8 | UInt16(second) }

    public var description: String {
        String(
            decoding: [UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)], as: UTF8.self)
    }
}

/// An ANT device as a channel-id message names it.
public struct ANTDeviceID: Sendable, Hashable, CustomStringConvertible {
    /// The device number (0 = wildcard, when a channel searches for any device).
    public var number: UInt16
    /// The device type, pairing bit (bit 7) masked off (0 = wildcard).
    public var type: UInt8
    /// The transmission type (its high nibble extends the device number; kept as sent).
    public var transmissionType: UInt8

    public init(number: UInt16, type: UInt8, transmissionType: UInt8 = 0) {
        self.number = number
        self.type = type & 0x7F
        self.transmissionType = transmissionType
    }

    /// The ANT+ profile of `type`, when it is one we know.
    public var deviceType: ANT.DeviceType? { ANT.DeviceType(rawValue: type) }

    /// `ant:<type>:<number>`, the form the engine's `SourceDevice` identifiers use.
    public var description: String { "ant:\(type):\(number)" }
}

/// A time a protocol carries with a reading.
public enum SensorTime: Sendable, Hashable {
    /// UTC from a GPS receiver (time of day; the date when the receiver sent one).
    case utc(UTCTime)
    /// Milliseconds on the watch's clock since the session's start (watch-link).
    case watchMilliseconds(Int)
}

/// A calendar day (proleptic Gregorian).
public struct CivilDate: Sendable, Hashable {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Days since 1970-01-01 (negative before), by Howard Hinnant's days-from-civil algorithm (wrapping
    /// arithmetic: absurd dates give absurd days, never a trap).
    public var daysSince1970: Int {
        let y = month <= 2 ? year &- 1 : year
        let era = (y >= 0 ? y : y &- 399) / 400
        let yearOfEra = y &- era &* 400
        let dayOfYear = (153 &* (month > 2 ? month &- 3 : month &+ 9) &+ 2) / 5 &+ day &- 1
        let dayOfEra = yearOfEra &* 365 &+ yearOfEra / 4 &- yearOfEra / 100 &+ dayOfYear
        return era &* 146_097 &+ dayOfEra &- 719_468
    }

    /// The day after this one.
    public var next: CivilDate {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let length = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][max(0, min(11, month - 1))]
        if day < length { return CivilDate(year: year, month: month, day: day &+ 1) }
        if month < 12 { return CivilDate(year: year, month: month &+ 1, day: 1) }
        return CivilDate(year: year &+ 1, month: 1, day: 1)
    }
}

/// A UTC time from a GPS receiver: the time of day, and the date when known.
public struct UTCTime: Sendable, Hashable {
    /// Seconds since midnight UTC (`hhmmss.ss`).
    public var secondsOfDay: Double
    /// The day: from an RMC sentence, or for GGA (which has none) from the last RMC, moved on a day
    /// when the time of day wrapped past midnight.
    public var date: CivilDate?

    public init(secondsOfDay: Double, date: CivilDate? = nil) {
        self.secondsOfDay = secondsOfDay
        self.date = date
    }

    /// Seconds since 1970-01-01 00:00 UTC, when the date is known.
    public var secondsSince1970: Double? {
        guard let date else { return nil }
        return Double(date.daysSince1970) * 86_400 + secondsOfDay
    }
}

/// A GPS fix or record from an NMEA GGA or RMC sentence.
public struct GPSFix: Sendable, Equatable {
    /// The sentence it came from.
    public enum Sentence: Sendable, Hashable {
        case gga
        case rmc
    }

    public var sentence: Sentence
    /// Whether the receiver has a fix: GGA fix quality above 0, RMC status `A` (and mode not `N`).
    public var isValid: Bool
    /// Degrees, north positive; nil when the field is empty.
    public var latitude: Double?
    /// Degrees, east positive; nil when the field is empty.
    public var longitude: Double?
    /// GGA fix quality (0 invalid, 1 GPS, 2 DGPS, …).
    public var fixQuality: UInt8?
    /// GGA satellites in use.
    public var satellites: Int?
    /// GGA horizontal dilution of precision.
    public var hdop: Double?
    /// GGA altitude above mean sea level, metres.
    public var altitude: Double?
    /// RMC speed over ground, metres per second (sent in knots).
    public var speed: Double?
    /// RMC course over ground, degrees true.
    public var course: Double?
    /// Metres travelled since the decoder started, summed over valid fixes (see `DistanceAccumulator`).
    public var totalDistance: Double

    public init(
        sentence: Sentence, isValid: Bool, latitude: Double? = nil, longitude: Double? = nil, fixQuality: UInt8? = nil,
        satellites: Int? = nil, hdop: Double? = nil, altitude: Double? = nil, speed: Double? = nil,
        course: Double? = nil, totalDistance: Double = 0
    ) {
        self.sentence = sentence
        self.isValid = isValid
        self.latitude = latitude
        self.longitude = longitude
        self.fixQuality = fixQuality
        self.satellites = satellites
        self.hdop = hdop
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.totalDistance = totalDistance
    }
}

/// A count of revolutions and the time of the last one, as a speed or cadence sensor sends them.
public struct RevolutionData: Sendable, Hashable {
    /// Cumulative revolutions as sent (rolls over at 16 bits, or 32 bits for GATT wheel data).
    public var revolutions: UInt32
    /// The event time of the last revolution in seconds, as sent (rolls over at 64 s, or 32 s for the
    /// 1/2048 s wheel time of the GATT cycling power measurement).
    public var eventTime: Double

    public init(revolutions: UInt32, eventTime: Double) {
        self.revolutions = revolutions
        self.eventTime = eventTime
    }
}

/// Heart rate with what the strap sends about beats.
public struct HeartRateReading: Sendable, Equatable {
    /// The sensor's computed heart rate, beats per minute (ANT+ sends 0 when it has none).
    public var beatsPerMinute: Int
    /// Beat-to-beat (RR) intervals in seconds, oldest first. ANT+: at most one, only when a new beat
    /// arrived (from page 4's previous beat time, or from consecutive messages one beat apart).
    public var rrIntervals: RRIntervals
    /// ANT+: the page number (toggle bit masked off).
    public var page: UInt8?
    /// ANT+: the cumulative beat count as sent (rolls over at 256).
    public var beatCount: UInt8?
    /// ANT+: the last beat's event time in seconds, as sent (1/1024 s, rolls over at 64 s).
    public var beatEventTime: Double?
    /// ANT+: beats since the previous message on this channel (nil for the first one).
    public var newBeats: Int?
    /// GATT: energy expended since the sensor's last reset, kilojoules.
    public var energyExpended: Int?
    /// GATT: skin contact, when the sensor supports detecting it.
    public var sensorContact: Bool?

    public init(
        beatsPerMinute: Int, rrIntervals: RRIntervals = RRIntervals(), page: UInt8? = nil, beatCount: UInt8? = nil,
        beatEventTime: Double? = nil, newBeats: Int? = nil, energyExpended: Int? = nil, sensorContact: Bool? = nil
    ) {
        self.beatsPerMinute = beatsPerMinute
        self.rrIntervals = rrIntervals
        self.page = page
        self.beatCount = beatCount
        self.beatEventTime = beatEventTime
        self.newBeats = newBeats
        self.energyExpended = energyExpended
        self.sensorContact = sensorContact
    }
}

/// Bike wheel and crank data, with the speed and cadence computed from consecutive readings.
public struct SpeedCadenceReading: Sendable, Equatable {
    /// Wheel revolutions and event time, as sent.
    public var wheel: RevolutionData?
    /// Crank revolutions and event time, as sent.
    public var crank: RevolutionData?
    /// Metres per second from Δwheel revolutions × circumference / Δtime; 0 after the stop timeout
    /// without a new revolution; nil until known.
    public var speed: Double?
    /// Revolutions per minute from Δcrank revolutions / Δtime; 0 after the stop timeout; nil until known.
    public var cadence: Double?
    /// Metres since the decoder first saw this sensor (wheel revolutions × circumference).
    public var distance: Double?

    public init(
        wheel: RevolutionData? = nil, crank: RevolutionData? = nil, speed: Double? = nil, cadence: Double? = nil,
        distance: Double? = nil
    ) {
        self.wheel = wheel
        self.crank = crank
        self.speed = speed
        self.cadence = cadence
        self.distance = distance
    }
}

/// Pedal power balance.
public struct PedalBalance: Sendable, Hashable {
    /// Which pedal `percent` refers to.
    public enum Pedal: Sendable, Hashable {
        case left
        case right
        case unknown
    }

    public var percent: Double
    public var pedal: Pedal

    public init(percent: Double, pedal: Pedal) {
        self.percent = percent
        self.pedal = pedal
    }
}

/// Bicycle power.
public struct PowerReading: Sendable, Equatable {
    /// ANT+: the page (0x10 power only, 0x12 crank torque); nil for GATT.
    public var page: UInt8?
    /// Instantaneous power, watts (ANT+ page 0x10, GATT).
    public var instantaneousPower: Int?
    /// Average power since the previous message, watts: Δaccumulated power / Δevent count (0x10), or
    /// 128π × Δtorque / Δperiod (0x12); 0 after the stop timeout; nil when no new event arrived.
    public var averagePower: Double?
    /// Crank cadence, rpm: as sent (0x10, when valid) or computed from crank data (0x12, GATT).
    public var cadence: Double?
    /// Average torque since the previous event, newton metres (0x12).
    public var averageTorque: Double?
    /// Pedal power balance, when sent.
    public var pedalBalance: PedalBalance?
    /// ANT+: the update event count as sent (rolls over at 256).
    public var eventCount: UInt8?
    /// ANT+ 0x10: accumulated power as sent, watts (rolls over at 65,536).
    public var accumulatedPower: UInt16?
    /// Accumulated torque as sent, 1/32 N·m (rolls over at 2,048 N·m).
    public var accumulatedTorque: UInt16?
    /// GATT: wheel revolutions and event time (1/2048 s), as sent.
    public var wheel: RevolutionData?
    /// GATT: crank revolutions and event time, as sent.
    public var crank: RevolutionData?
    /// GATT: metres per second from the wheel data (0 after the stop timeout).
    public var speed: Double?
    /// GATT: accumulated energy, kilojoules.
    public var accumulatedEnergy: Int?

    public init(
        page: UInt8? = nil, instantaneousPower: Int? = nil, averagePower: Double? = nil, cadence: Double? = nil,
        averageTorque: Double? = nil, pedalBalance: PedalBalance? = nil, eventCount: UInt8? = nil,
        accumulatedPower: UInt16? = nil, accumulatedTorque: UInt16? = nil, wheel: RevolutionData? = nil,
        crank: RevolutionData? = nil, speed: Double? = nil, accumulatedEnergy: Int? = nil
    ) {
        self.page = page
        self.instantaneousPower = instantaneousPower
        self.averagePower = averagePower
        self.cadence = cadence
        self.averageTorque = averageTorque
        self.pedalBalance = pedalBalance
        self.eventCount = eventCount
        self.accumulatedPower = accumulatedPower
        self.accumulatedTorque = accumulatedTorque
        self.wheel = wheel
        self.crank = crank
        self.speed = speed
        self.accumulatedEnergy = accumulatedEnergy
    }
}

/// Running speed, cadence and distance (foot pod or BLE running speed and cadence sensor).
public struct StrideReading: Sendable, Equatable {
    /// ANT+: the page number.
    public var page: UInt8?
    /// Metres per second.
    public var speed: Double?
    /// Steps per minute (ANT+ sends strides per minute, one stride being two steps: doubled here;
    /// GATT RSC sends steps per minute).
    public var stepsPerMinute: Double?
    /// GATT: stride length, metres.
    public var strideLength: Double?
    /// Metres: GATT RSC the sensor's total distance as sent; ANT+ page 1 the distance since the
    /// decoder first saw the pod (the page's own field rolls over at 256 m).
    public var totalDistance: Double?
    /// ANT+ page 1: strides since the decoder first saw the pod (the page's count rolls over at 256).
    public var totalStrides: Int?
    /// ANT+ page 1: the pod's time in seconds, as sent (1/200 s, rolls over at 256 s).
    public var time: Double?
    /// GATT: running (true) or walking.
    public var isRunning: Bool?

    public init(
        page: UInt8? = nil, speed: Double? = nil, stepsPerMinute: Double? = nil, strideLength: Double? = nil,
        totalDistance: Double? = nil, totalStrides: Int? = nil, time: Double? = nil, isRunning: Bool? = nil
    ) {
        self.page = page
        self.speed = speed
        self.stepsPerMinute = stepsPerMinute
        self.strideLength = strideLength
        self.totalDistance = totalDistance
        self.totalStrides = totalStrides
        self.time = time
        self.isRunning = isRunning
    }
}

/// A pool length (or a rest at the wall) as the watch detected it.
public struct SwimLength: Sendable, Hashable {
    /// End, milliseconds since the session's start on the watch's clock.
    public var endMilliseconds: Int
    public var durationMilliseconds: Int
    public var kind: WatchLink.LengthKind
    public var style: WatchLink.Style?
    public var strokes: Int?

    public init(
        endMilliseconds: Int, durationMilliseconds: Int, kind: WatchLink.LengthKind, style: WatchLink.Style?,
        strokes: Int?
    ) {
        self.endMilliseconds = endMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.kind = kind
        self.style = style
        self.strokes = strokes
    }
}

/// Strokes counted over an interval ending at `endMilliseconds`.
public struct StrokeCount: Sendable, Hashable {
    public var endMilliseconds: Int
    public var durationMilliseconds: Int
    public var count: Int

    public init(endMilliseconds: Int, durationMilliseconds: Int, count: Int) {
        self.endMilliseconds = endMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.count = count
    }
}

/// Distance the watch measured over an interval ending at `endMilliseconds` (watch-link `DST`).
public struct WatchDistance: Sendable, Hashable {
    public var endMilliseconds: Int
    public var durationMilliseconds: Int
    public var meters: Double

    public init(endMilliseconds: Int, durationMilliseconds: Int, meters: Double) {
        self.endMilliseconds = endMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.meters = meters
    }
}

/// What an ANT+ device says about itself; each page fills some fields.
public struct ANTDeviceInfo: Sendable, Hashable {
    /// The ANT+ manufacturer id (1 Garmin, 32 Wahoo …).
    public var manufacturer: UInt16?
    /// The manufacturer's model number.
    public var model: UInt16?
    /// The serial number (page 81: 32 bits; heart-rate page 2: the upper 16 bits of it).
    public var serial: UInt32?
    /// Hardware revision or version.
    public var hardwareVersion: UInt8?
    /// Software version (page 81: main × 100 + supplemental, when sent; else main).
    public var softwareVersion: Int?

    public init(
        manufacturer: UInt16? = nil, model: UInt16? = nil, serial: UInt32? = nil, hardwareVersion: UInt8? = nil,
        softwareVersion: Int? = nil
    ) {
        self.manufacturer = manufacturer
        self.model = model
        self.serial = serial
        self.hardwareVersion = hardwareVersion
        self.softwareVersion = softwareVersion
    }

    /// The manufacturer's name for the ANT+ ids people meet most; nil for others.
    public static func manufacturerName(_ id: UInt16) -> String? {
        switch id {
        case 1: "Garmin"
        case 6: "SRM"
        case 7: "Quarq"
        case 9: "Saris"
        case 15: "Dynastream"
        case 23: "Suunto"
        case 32: "Wahoo Fitness"
        case 40: "Concept2"
        case 48: "Pioneer"
        case 69: "Stages Cycling"
        case 70: "Sigma"
        case 89: "Tacx"
        case 255: "development"
        default: nil
        }
    }
}

/// A fitness-equipment reading (FE-C): general page 16, trainer page 25, treadmill page 19.
public struct FitnessEquipmentReading: Sendable, Equatable {
    /// The page it came from.
    public var page: UInt8
    /// The equipment type (page 16 byte 1, bits 0–4: 19 treadmill, 20 elliptical, 22 rower, 23 climber,
    /// 24 nordic skier, 25 trainer / stationary bike), once known.
    public var equipmentType: UInt8?
    /// Speed, metres per second (page 16).
    public var speed: Double?
    /// Distance since the first reading, metres (page 16 counts 0…255 m and rolls over).
    public var totalDistance: Double?
    /// Elapsed time as sent, seconds (rolls over at 64 s).
    public var elapsedTime: Double?
    /// Heart rate the equipment measured, bpm (page 16; nil when invalid).
    public var heartRate: Int?
    /// Instantaneous power, watts (page 25).
    public var instantaneousPower: Int?
    /// Average power since the previous update: Δaccumulated power / Δevent count (page 25).
    public var averagePower: Double?
    /// Cadence, rpm (page 25) or strides per minute (page 19), when valid.
    public var cadence: Int?

    public init(
        page: UInt8, equipmentType: UInt8? = nil, speed: Double? = nil, totalDistance: Double? = nil,
        elapsedTime: Double? = nil, heartRate: Int? = nil, instantaneousPower: Int? = nil, averagePower: Double? = nil,
        cadence: Int? = nil
    ) {
        self.page = page
        self.equipmentType = equipmentType
        self.speed = speed
        self.totalDistance = totalDistance
        self.elapsedTime = elapsedTime
        self.heartRate = heartRate
        self.instantaneousPower = instantaneousPower
        self.averagePower = averagePower
        self.cadence = cadence
    }

    /// Whether the equipment is a treadmill (running distance), as page 16 said.
    public var isTreadmill: Bool { equipmentType == 19 }
}
