/// Bluetooth GATT characteristic payloads of heart-rate, speed and cadence, running and cycling power
/// sensors (as a BLE-to-serial bridge or a watch tunnels them): pure parsers, and `GATT.Session`, the
/// per-characteristic state that turns them into readings with speeds and cadences.
///
/// Parsers return nil for a payload shorter than its flags require (or, for heart rate, an RR list
/// with an odd byte); bytes after the last flagged field are ignored, as the specification asks of
/// receivers (later versions append fields).
public enum GATT {
    /// Heart Rate Measurement.
    public static let heartRateMeasurement: UInt16 = 0x2A37
    /// CSC (cycling speed and cadence) Measurement.
    public static let cscMeasurement: UInt16 = 0x2A5B
    /// RSC (running speed and cadence) Measurement.
    public static let rscMeasurement: UInt16 = 0x2A53
    /// Cycling Power Measurement.
    public static let cyclingPowerMeasurement: UInt16 = 0x2A63

    /// A Heart Rate Measurement (0x2A37).
    public struct HeartRateMeasurement: Sendable, Hashable {
        /// Beats per minute (sent as u8, or u16 when flags bit 0 is set).
        public var heartRate: Int
        /// Skin contact when the sensor supports detecting it (flags bit 2), nil otherwise.
        public var sensorContact: Bool?
        /// Energy expended, kilojoules (flags bit 3).
        public var energyExpended: Int?
        /// RR intervals, oldest first (flags bit 4).
        public var rrIntervals: RRIntervals

        public init(
            heartRate: Int, sensorContact: Bool? = nil, energyExpended: Int? = nil,
            rrIntervals: RRIntervals = RRIntervals()
        ) {
            self.heartRate = heartRate
            self.sensorContact = sensorContact
            self.energyExpended = energyExpended
            self.rrIntervals = rrIntervals
        }
    }

    /// A CSC Measurement (0x2A5B).
    public struct CSCMeasurement: Sendable, Hashable {
        /// Cumulative wheel revolutions (u32) and last wheel event time (1/1024 s) (flags bit 0).
        public var wheelRevolutions: UInt32?
        public var wheelEventTime: UInt16?
        /// Cumulative crank revolutions (u16) and last crank event time (1/1024 s) (flags bit 1).
        public var crankRevolutions: UInt16?
        public var crankEventTime: UInt16?

        public init(
            wheelRevolutions: UInt32? = nil, wheelEventTime: UInt16? = nil, crankRevolutions: UInt16? = nil,
            crankEventTime: UInt16? = nil
        ) {
            self.wheelRevolutions = wheelRevolutions
            self.wheelEventTime = wheelEventTime
            self.crankRevolutions = crankRevolutions
            self.crankEventTime = crankEventTime
        }
    }

    /// An RSC Measurement (0x2A53).
    public struct RSCMeasurement: Sendable, Hashable {
        /// Metres per second (sent in 1/256 m/s).
        public var speed: Double
        /// Steps per minute.
        public var cadence: Int
        /// Metres (sent in 1/100 m) (flags bit 0).
        public var strideLength: Double?
        /// Metres (sent in 1/10 m) (flags bit 1).
        public var totalDistance: Double?
        /// Running (flags bit 2 set) or walking.
        public var isRunning: Bool

        public init(
            speed: Double, cadence: Int, strideLength: Double? = nil, totalDistance: Double? = nil, isRunning: Bool
        ) {
            self.speed = speed
            self.cadence = cadence
            self.strideLength = strideLength
            self.totalDistance = totalDistance
            self.isRunning = isRunning
        }
    }

    /// A Cycling Power Measurement (0x2A63): flags u16, instantaneous power s16, then the flagged fields
    /// in order.
    public struct CyclingPowerMeasurement: Sendable, Hashable {
        public var flags: UInt16
        /// Watts.
        public var instantaneousPower: Int
        /// Percent (sent in 1/2 %) of the left pedal when flags bit 1 is set, else of an unknown one (bit 0).
        public var pedalBalance: PedalBalance?
        /// 1/32 N·m (bit 2; bit 3 says whether wheel or crank based).
        public var accumulatedTorque: UInt16?
        /// Cumulative wheel revolutions (u32) and last wheel event time in 1/2048 s (bit 4).
        public var wheelRevolutions: UInt32?
        public var wheelEventTime: UInt16?
        /// Cumulative crank revolutions (u16) and last crank event time in 1/1024 s (bit 5).
        public var crankRevolutions: UInt16?
        public var crankEventTime: UInt16?
        /// Newtons (bit 6).
        public var maximumForce: Int16?
        public var minimumForce: Int16?
        /// 1/32 N·m (bit 7).
        public var maximumTorque: Int16?
        public var minimumTorque: Int16?
        /// Degrees, 12 bits each (bit 8).
        public var maximumAngle: UInt16?
        public var minimumAngle: UInt16?
        /// Degrees (bits 9 and 10).
        public var topDeadSpotAngle: UInt16?
        public var bottomDeadSpotAngle: UInt16?
        /// Kilojoules (bit 11).
        public var accumulatedEnergy: UInt16?

        public init(flags: UInt16, instantaneousPower: Int) {
            self.flags = flags
            self.instantaneousPower = instantaneousPower
        }
    }

    /// Parses a Heart Rate Measurement.
    public static func parseHeartRate(_ payload: UnsafeRawBufferPointer) -> HeartRateMeasurement? {
        guard payload.count >= 2 else { return nil }
        let flags = payload[0]
        var offset = 1
        var measurement = HeartRateMeasurement(heartRate: 0)
        if flags & 0x01 != 0 {
            guard payload.count >= 3 else { return nil }
            measurement.heartRate = Int(LittleEndian.u16(payload, 1))
            offset = 3
        } else {
            measurement.heartRate = Int(payload[1])
            offset = 2
        }
        if flags & 0x04 != 0 { measurement.sensorContact = flags & 0x02 != 0 }
        if flags & 0x08 != 0 {
            guard payload.count >= offset &+ 2 else { return nil }
            measurement.energyExpended = Int(LittleEndian.u16(payload, offset))
            offset &+= 2
        }
        if flags & 0x10 != 0 {
            guard (payload.count &- offset) % 2 == 0 else { return nil }
            while offset &+ 1 < payload.count {
                measurement.rrIntervals.append(ticks: LittleEndian.u16(payload, offset))
                offset &+= 2
            }
        }
        return measurement
    }

    /// Parses a CSC Measurement.
    public static func parseCSC(_ payload: UnsafeRawBufferPointer) -> CSCMeasurement? {
        guard payload.count >= 1 else { return nil }
        let flags = payload[0]
        var offset = 1
        var measurement = CSCMeasurement()
        if flags & 0x01 != 0 {
            guard payload.count >= offset &+ 6 else { return nil }
            measurement.wheelRevolutions = LittleEndian.u32(payload, offset)
            measurement.wheelEventTime = LittleEndian.u16(payload, offset &+ 4)
            offset &+= 6
        }
        if flags & 0x02 != 0 {
            guard payload.count >= offset &+ 4 else { return nil }
            measurement.crankRevolutions = LittleEndian.u16(payload, offset)
            measurement.crankEventTime = LittleEndian.u16(payload, offset &+ 2)
        }
        return measurement
    }

    /// Parses an RSC Measurement.
    public static func parseRSC(_ payload: UnsafeRawBufferPointer) -> RSCMeasurement? {
        guard payload.count >= 4 else { return nil }
        let flags = payload[0]
        var measurement = RSCMeasurement(
            speed: Double(LittleEndian.u16(payload, 1)) / 256, cadence: Int(payload[3]), isRunning: flags & 0x04 != 0)
        var offset = 4
        if flags & 0x01 != 0 {
            guard payload.count >= offset &+ 2 else { return nil }
            measurement.strideLength = Double(LittleEndian.u16(payload, offset)) / 100
            offset &+= 2
        }
        if flags & 0x02 != 0 {
            guard payload.count >= offset &+ 4 else { return nil }
            measurement.totalDistance = Double(LittleEndian.u32(payload, offset)) / 10
        }
        return measurement
    }

    /// Parses a Cycling Power Measurement.
    public static func parseCyclingPower(_ payload: UnsafeRawBufferPointer) -> CyclingPowerMeasurement? {
        guard payload.count >= 4 else { return nil }
        let flags = LittleEndian.u16(payload, 0)
        var measurement = CyclingPowerMeasurement(
            flags: flags, instantaneousPower: Int(Int16(bitPattern: LittleEndian.u16(payload, 2))))
        var offset = 4
        func has(_ bit: UInt16, _ bytes: Int) -> Bool? {
            guard flags & (1 << bit) != 0 else { return false }
            return payload.count >= offset &+ bytes ? true : nil
        }
        guard let balance = has(0, 1) else { return nil }
        if balance {
            measurement.pedalBalance = PedalBalance(
                percent: Double(payload[offset]) / 2, pedal: flags & 0x02 != 0 ? .left : .unknown)
            offset &+= 1
        }
        guard let torque = has(2, 2) else { return nil }
        if torque {
            measurement.accumulatedTorque = LittleEndian.u16(payload, offset)
            offset &+= 2
        }
        guard let wheel = has(4, 6) else { return nil }
        if wheel {
            measurement.wheelRevolutions = LittleEndian.u32(payload, offset)
            measurement.wheelEventTime = LittleEndian.u16(payload, offset &+ 4)
            offset &+= 6
        }
        guard let crank = has(5, 4) else { return nil }
        if crank {
            measurement.crankRevolutions = LittleEndian.u16(payload, offset)
            measurement.crankEventTime = LittleEndian.u16(payload, offset &+ 2)
            offset &+= 4
        }
        guard let forces = has(6, 4) else { return nil }
        if forces {
            measurement.maximumForce = Int16(bitPattern: LittleEndian.u16(payload, offset))
            measurement.minimumForce = Int16(bitPattern: LittleEndian.u16(payload, offset &+ 2))
            offset &+= 4
        }
        guard let torques = has(7, 4) else { return nil }
        if torques {
            measurement.maximumTorque = Int16(bitPattern: LittleEndian.u16(payload, offset))
            measurement.minimumTorque = Int16(bitPattern: LittleEndian.u16(payload, offset &+ 2))
            offset &+= 4
        }
        guard let angles = has(8, 3) else { return nil }
        if angles {
            let packed =
                UInt32(payload[offset]) | UInt32(payload[offset &+ 1]) << 8 | UInt32(payload[offset &+ 2]) << 16
            measurement.maximumAngle = UInt16(truncatingIfNeeded: packed & 0xFFF)
            measurement.minimumAngle = UInt16(truncatingIfNeeded: packed >> 12)
            offset &+= 3
        }
        guard let top = has(9, 2) else { return nil }
        if top {
            measurement.topDeadSpotAngle = LittleEndian.u16(payload, offset)
            offset &+= 2
        }
        guard let bottom = has(10, 2) else { return nil }
        if bottom {
            measurement.bottomDeadSpotAngle = LittleEndian.u16(payload, offset)
            offset &+= 2
        }
        guard let energy = has(11, 2) else { return nil }
        if energy { measurement.accumulatedEnergy = LittleEndian.u16(payload, offset) }
        return measurement
    }

    /// The state a stream of characteristic values needs to give speeds and cadences: the previous
    /// wheel and crank revolutions and event times of the CSC and cycling power characteristics (each
    /// its own), and the stop clock.
    ///
    /// With no new revolution the last rate is held until `stopAfterMilliseconds` have passed on the
    /// values' clock (watch-link milliseconds), then 0 is reported; values without a time advance
    /// the stop clock by `millisecondsPerValue`.
    public struct Session: Sendable, Hashable {
        /// Wheel circumference, metres.
        public var wheelCircumference: Double
        /// Time without a new revolution after which speed and cadence read 0, milliseconds.
        public var stopAfterMilliseconds: Int
        /// How far a value without a time advances the stop clock, milliseconds.
        public var millisecondsPerValue: Int

        private var cscWheel = RevolutionTracker()
        private var cscCrank = RevolutionTracker()
        private var cscTime: Int?
        private var powerWheel = RevolutionTracker()
        private var powerCrank = RevolutionTracker()
        private var powerTime: Int?

        public init(
            wheelCircumference: Double = 2.105, stopAfterMilliseconds: Int = 3000, millisecondsPerValue: Int = 1000
        ) {
            self.wheelCircumference = wheelCircumference.isFinite && wheelCircumference > 0 ? wheelCircumference : 2.105
            self.stopAfterMilliseconds = stopAfterMilliseconds
            self.millisecondsPerValue = millisecondsPerValue
        }

        /// Forgets the previous values (after a gap): the next ones start again.
        public mutating func restart() {
            cscWheel.restart()
            cscCrank.restart()
            powerWheel.restart()
            powerCrank.restart()
            cscTime = nil
            powerTime = nil
        }

        private func elapsed(since previous: Int?, to now: Int?) -> Int {
            guard let now, let previous else { return millisecondsPerValue }
            return now >= previous ? now &- previous : 0
        }

        /// Feeds a revolution count and event time (when both were sent) to `tracker`.
        private static func track(
            _ tracker: inout RevolutionTracker, _ count: UInt32?, _ time: UInt16?, mask: UInt32, ticksPerSecond: Double,
            step: Int, stopAfter: Int
        ) -> (data: RevolutionData?, rate: Double?) {
            guard let count, let time else { return (nil, nil) }
            let rate = tracker.update(
                count: count, countMask: mask, time: time, ticksPerSecond: ticksPerSecond, elapsed: step,
                stopAfter: stopAfter)
            return (RevolutionData(revolutions: count, eventTime: Double(time) / ticksPerSecond), rate)
        }

        /// The reading of one characteristic value at `milliseconds` (nil when unknown). Returns nil
        /// for a malformed payload; `.unknown` characteristics give `nil` too (check
        /// `GATT.isSupported`).
        public mutating func reading(
            characteristic: UInt16, payload: UnsafeRawBufferPointer, milliseconds: Int?
        )
            -> SensorReading.Value?
        {
            switch characteristic {
            case GATT.heartRateMeasurement:
                guard let measurement = GATT.parseHeartRate(payload) else { return nil }
                return .heartRate(
                    HeartRateReading(
                        beatsPerMinute: measurement.heartRate,
                        rrIntervals: measurement.rrIntervals,
                        energyExpended: measurement.energyExpended, sensorContact: measurement.sensorContact))
            case GATT.rscMeasurement:
                guard let measurement = GATT.parseRSC(payload) else { return nil }
                return .stride(
                    StrideReading(
                        speed: measurement.speed, stepsPerMinute: Double(measurement.cadence),
                        strideLength: measurement.strideLength, totalDistance: measurement.totalDistance,
                        isRunning: measurement.isRunning))
            case GATT.cscMeasurement:
                guard let measurement = GATT.parseCSC(payload) else { return nil }
                let step = elapsed(since: cscTime, to: milliseconds)
                if let milliseconds { cscTime = milliseconds }
                let wheel = Self.track(
                    &cscWheel, measurement.wheelRevolutions, measurement.wheelEventTime, mask: 0xFFFF_FFFF,
                    ticksPerSecond: 1024, step: step, stopAfter: stopAfterMilliseconds)
                let crank = Self.track(
                    &cscCrank, measurement.crankRevolutions.map(UInt32.init), measurement.crankEventTime, mask: 0xFFFF,
                    ticksPerSecond: 1024, step: step, stopAfter: stopAfterMilliseconds)
                // Built in one expression: readings are large, and each intermediate copy costs.
                return .speedCadence(
                    SpeedCadenceReading(
                        wheel: wheel.data, crank: crank.data, speed: wheel.rate.map { $0 * wheelCircumference },
                        cadence: crank.rate.map { $0 * 60 },
                        distance: wheel.data.map { _ in Double(cscWheel.total) * wheelCircumference }))
            case GATT.cyclingPowerMeasurement:
                guard let measurement = GATT.parseCyclingPower(payload) else { return nil }
                let step = elapsed(since: powerTime, to: milliseconds)
                if let milliseconds { powerTime = milliseconds }
                let wheel = Self.track(
                    &powerWheel, measurement.wheelRevolutions, measurement.wheelEventTime, mask: 0xFFFF_FFFF,
                    ticksPerSecond: 2048, step: step, stopAfter: stopAfterMilliseconds)
                let crank = Self.track(
                    &powerCrank, measurement.crankRevolutions.map(UInt32.init), measurement.crankEventTime,
                    mask: 0xFFFF, ticksPerSecond: 1024, step: step, stopAfter: stopAfterMilliseconds)
                return .power(
                    PowerReading(
                        instantaneousPower: measurement.instantaneousPower, cadence: crank.rate.map { $0 * 60 },
                        pedalBalance: measurement.pedalBalance, accumulatedTorque: measurement.accumulatedTorque,
                        wheel: wheel.data, crank: crank.data, speed: wheel.rate.map { $0 * wheelCircumference },
                        accumulatedEnergy: measurement.accumulatedEnergy.map(Int.init)))
            default:
                return nil
            }
        }

        /// `reading(characteristic:payload:milliseconds:)` for an array.
        public mutating func reading(
            characteristic: UInt16, payload: [UInt8], milliseconds: Int?
        ) -> SensorReading.Value? {
            payload.withUnsafeBytes { reading(characteristic: characteristic, payload: $0, milliseconds: milliseconds) }
        }
    }

    /// Whether `Session` decodes values of `characteristic`.
    public static func isSupported(_ characteristic: UInt16) -> Bool {
        characteristic == heartRateMeasurement || characteristic == cscMeasurement || characteristic == rscMeasurement
            || characteristic == cyclingPowerMeasurement
    }

    /// `parseHeartRate` for an array.
    public static func parseHeartRate(_ payload: [UInt8]) -> HeartRateMeasurement? {
        payload.withUnsafeBytes { parseHeartRate($0) }
    }

    /// `parseCSC` for an array.
    public static func parseCSC(_ payload: [UInt8]) -> CSCMeasurement? { payload.withUnsafeBytes { parseCSC($0) } }

    /// `parseRSC` for an array.
    public static func parseRSC(_ payload: [UInt8]) -> RSCMeasurement? { payload.withUnsafeBytes { parseRSC($0) } }

    /// `parseCyclingPower` for an array.
    public static func parseCyclingPower(_ payload: [UInt8]) -> CyclingPowerMeasurement? {
        payload.withUnsafeBytes { parseCyclingPower($0) }
    }
}
