package configs

// Values holds config values by name, as TopicValues returns them, and
// reads them as typed values. A name missing from the map reads as its
// default (topic catalogue first, then broker catalogue). Values are parsed
// as Kafka parses them; the getters do not apply range checks, which belong
// to validation when the value is set.
type Values map[string]string

// raw returns the value of name: the map's, else the config's default.
func (v Values) raw(name string) (string, error) {
	if raw, ok := v[name]; ok {
		return raw, nil
	}
	d, ok := topicByName[name]
	if !ok {
		d, ok = brokerByName[name]
	}
	switch {
	case !ok:
		return "", newError(ErrUnknownConfig, name, "Unknown config name: "+name)
	case d.NullDefault:
		return "", newError(ErrNullValue, name, "Config "+name+" has no value")
	}
	return d.Default, nil
}

func (v Values) parse(name string, t Type) (parsed, error) {
	raw, err := v.raw(name)
	if err != nil {
		return parsed{}, err
	}
	return parseValue(name, t, raw)
}

// String returns the value of name, trimmed as Kafka trims strings.
func (v Values) String(name string) (string, error) {
	p, err := v.parse(name, TypeString)
	return p.s, err
}

// Int64 returns the value of name as an integer of up to 64 bits, for LONG,
// INT and SHORT configs alike.
func (v Values) Int64(name string) (int64, error) {
	p, err := v.parse(name, TypeLong)
	return p.i, err
}

// Int32 returns the value of name as an INT.
func (v Values) Int32(name string) (int32, error) {
	p, err := v.parse(name, TypeInt)
	return int32(p.i), err
}

// Float64 returns the value of name as a DOUBLE.
func (v Values) Float64(name string) (float64, error) {
	p, err := v.parse(name, TypeDouble)
	return p.f, err
}

// Bool returns the value of name as a BOOLEAN.
func (v Values) Bool(name string) (bool, error) {
	p, err := v.parse(name, TypeBoolean)
	return p.b, err
}

// List returns the value of name as a LIST: split on commas, whitespace
// around them dropped; an empty value is an empty list.
func (v Values) List(name string) ([]string, error) {
	p, err := v.parse(name, TypeList)
	return p.list, err
}
